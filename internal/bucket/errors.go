package bucket

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/windlass-dev/windlass/internal/redact"
)

// ErrAccessDenied is wrapped by errors where the S3 server refused the
// credentials or denied access to the bucket or an object.
var ErrAccessDenied = errors.New("access denied")

// ErrBucketNotFound is wrapped by the error for a bucket that does not
// exist.
var ErrBucketNotFound = errors.New("bucket not found")

// credentialCodes are the S3 error codes of a request whose signature or
// access key the server did not accept (XAdminUserNotFound is versitygw's
// unknown access key).
var credentialCodes = map[string]bool{
	"SignatureDoesNotMatch": true,
	"InvalidAccessKeyId":    true,
	"InvalidClientTokenId":  true,
	"InvalidSecretKey":      true,
	"InvalidSignature":      true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
	"XAdminUserNotFound":    true,
}

// maxDetail is how many bytes of a server's message an error keeps.
const maxDetail = 300

// amzParam finds a presigned URL's X-Amz-* query parameter written outside
// a URL, with its value.
var amzParam = regexp.MustCompile(`(?i)x-amz-[a-z0-9-]*=[^\s&"'<>]*`)

// kindError is an error with its own message that wraps a sentinel error
// callers can test with errors.Is.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// explain turns an error of minio-go into one line for users: a clear
// message for missing buckets and refused credentials, the S3 error code
// and the server's message otherwise, never a credential or a query
// string. action says what failed ("listing bucket 'x'"); key is the
// object concerned, if any.
func (c *Client) explain(ctx context.Context, err error, bucket, key, action string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s stopped: %w", action, ctxErr)
	}
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) || resp.Code == "" {
		return fmt.Errorf("%s: %s", action, c.clean(err.Error()))
	}
	switch {
	case resp.Code == "NoSuchBucket":
		return &kindError{msg: fmt.Sprintf("bucket '%s' does not exist", bucket), kind: ErrBucketNotFound}
	case resp.Code == "NoSuchKey" && key != "":
		return fmt.Errorf("%s: the object is gone since the listing: retry", action)
	case credentialCodes[resp.Code]:
		return &kindError{kind: ErrAccessDenied, msg: fmt.Sprintf(
			"%s: the S3 server refused the credentials (%s): check accesskey and secretkey of secretRef", action, resp.Code)}
	case resp.Code == "AccessDenied" && c.anonymous:
		return &kindError{kind: ErrAccessDenied, msg: fmt.Sprintf(
			"%s: the S3 server denied anonymous access (AccessDenied): set a secretRef with accesskey and secretkey", action)}
	case resp.Code == "AccessDenied":
		return &kindError{kind: ErrAccessDenied, msg: fmt.Sprintf(
			"%s: the S3 server denied access (AccessDenied): check accesskey and secretkey of secretRef, and that they may list and read bucket '%s'", action, bucket)}
	}
	detail := c.clean(resp.Message)
	if detail == "" {
		return fmt.Errorf("%s: S3 error %s (HTTP %d)", action, c.clean(resp.Code), resp.StatusCode)
	}
	return fmt.Errorf("%s: S3 error %s (HTTP %d): %s", action, c.clean(resp.Code), resp.StatusCode, detail)
}

// clean returns s on one line, at most maxDetail bytes, without URL
// userinfo, query strings, X-Amz-* parameters or the secret key.
func (c *Client) clean(s string) string {
	return oneLine(s, c.secretKey)
}

// oneLine returns s on one line, at most maxDetail bytes, without URL
// userinfo, query strings, X-Amz-* parameters or secret.
func oneLine(s, secret string) string {
	s = strings.Join(strings.Fields(scrub(s, secret)), " ")
	s = scrub(s, secret)
	s = redact.String(s)
	s = amzParam.ReplaceAllString(s, "[redacted]")
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "…"
	}
	return s
}

// scrub replaces every occurrence of secret in s.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
