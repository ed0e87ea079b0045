package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/windlass-dev/windlass/internal/netguard"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Sentinel errors that FetchIndex and DownloadChart wrap.
var (
	// ErrTooLarge is wrapped when a response is over its size limit.
	ErrTooLarge = errors.New("too large")
	// ErrUnauthorized is wrapped when the server answers 401 or 403.
	ErrUnauthorized = errors.New("access denied")
)

// FetchIndex downloads the index of the HTTP chart repository at repoURL
// (<repoURL>/index.yaml, keeping repoURL's query): at most
// o.MaxIndexSize bytes within o.Timeout. Parse it with ParseIndex.
func FetchIndex(ctx context.Context, repoURL string, o ClientOptions) ([]byte, error) {
	u, err := IndexURL(repoURL)
	if err != nil {
		return nil, err
	}
	data, err := get(ctx, repoURL, u, o, o.maxIndexSize())
	if err != nil {
		return nil, o.fail("fetching the index", u, err)
	}
	return data, nil
}

// DownloadChart downloads the .tgz of cv from the repository at repoURL:
// cv.URLs[0], resolved against repoURL when relative (keeping repoURL's
// query), at most o.MaxChartSize bytes within o.Timeout.
func DownloadChart(ctx context.Context, repoURL string, cv *ChartVersion, o ClientOptions) ([]byte, error) {
	if cv == nil || len(cv.URLs) == 0 {
		return nil, errors.New("the chart version has no download URL in the index")
	}
	u, err := ChartURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, err
	}
	data, err := get(ctx, repoURL, u, o, o.maxChartSize())
	if err != nil {
		return nil, o.fail(fmt.Sprintf("downloading chart %s %s", cv.Name, cv.Version), u, err)
	}
	return data, nil
}

// IndexURL returns the URL of the index of the repository at repoURL:
// "/index.yaml" appended to its path, whether or not it ends with '/'.
func IndexURL(repoURL string) (string, error) {
	u, err := parseHTTPURL(repoURL)
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/index.yaml"
	if u.RawPath != "" {
		u.RawPath = strings.TrimSuffix(u.RawPath, "/") + "/index.yaml"
	}
	return u.String(), nil
}

// ChartURL resolves a chart URL of the index against the repository's
// URL: an absolute URL stays as it is; a relative one is resolved under
// repoURL's path (as if it ended with '/') and gets repoURL's query.
func ChartURL(repoURL, ref string) (string, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("%w: the index names the chart URL %q", ErrInvalidURL, redactURL(ref))
	}
	if r.IsAbs() {
		if _, err := parseHTTPURL(ref); err != nil {
			return "", err
		}
		return ref, nil
	}
	base, err := parseHTTPURL(repoURL)
	if err != nil {
		return "", err
	}
	base.Path = strings.TrimSuffix(base.Path, "/") + "/"
	if base.RawPath != "" {
		base.RawPath = strings.TrimSuffix(base.RawPath, "/") + "/"
	}
	resolved := base.ResolveReference(r)
	resolved.RawQuery = base.RawQuery
	return resolved.String(), nil
}

// get GETs target with the client of the repository at repoURL and
// returns at most limit bytes of body.
func get(ctx context.Context, repoURL, target string, o ClientOptions, limit int64) ([]byte, error) {
	client, err := NewClient(repoURL, o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx, o)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, timeoutError(ctx, o, err)
	}
	defer resp.Body.Close()
	if err := statusError(resp); err != nil {
		return nil, err
	}
	data, err := readLimited(resp, limit)
	if err != nil {
		return nil, timeoutError(ctx, o, err)
	}
	return data, nil
}

// statusError returns the error of a non-200 answer.
func statusError(resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: the server answered %s: check the credentials", ErrUnauthorized, resp.Status)
	default:
		return fmt.Errorf("the server answered %s", resp.Status)
	}
}

// readLimited reads the body of resp, failing with ErrTooLarge as soon as
// it passes limit bytes (or announces more).
func readLimited(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w: the server announces %d bytes, the limit is %d bytes",
			ErrTooLarge, resp.ContentLength, limit)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := io.Copy(&buf, io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: the response is longer than the limit of %d bytes", ErrTooLarge, limit)
	}
	return buf.Bytes(), nil
}

// timeoutError says so when ctx's deadline ended the request.
func timeoutError(ctx context.Context, o ClientOptions, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: no complete answer within the timeout of %s", context.DeadlineExceeded, o.timeout())
	}
	return err
}

// fail wraps err with what failed and the URL, both without credentials.
// The sentinel errors stay reachable with errors.Is.
func (o ClientOptions) fail(what, target string, err error) error {
	where := redactURL(target)
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if last := redactURL(uerr.URL); last != where {
			where += " (redirected to " + last + ")"
		}
		err = uerr.Err
	}
	msg := o.scrub(fmt.Sprintf("%s from %s: %s", what, where, err))
	for _, sentinel := range []error{ErrTooLarge, ErrUnauthorized, ErrInvalidURL, context.DeadlineExceeded,
		netguard.ErrLinkLocal, netguard.ErrLoopback, netguard.ErrPrivate} {
		if errors.Is(err, sentinel) {
			return &scrubbedError{msg: msg, cause: sentinel}
		}
	}
	return errors.New(msg)
}

// scrub removes the userinfo and queries of URLs and the password from
// msg.
func (o ClientOptions) scrub(msg string) string {
	msg = redact.String(msg)
	if o.Password != "" {
		msg = strings.ReplaceAll(msg, o.Password, "***")
	}
	return msg
}

// scrubbedError is an error whose message holds no credentials and that
// wraps one sentinel error (not the original error, whose text may hold
// them).
type scrubbedError struct {
	msg   string
	cause error
}

// Error returns the scrubbed message.
func (e *scrubbedError) Error() string { return e.msg }

// Unwrap returns the sentinel error.
func (e *scrubbedError) Unwrap() error { return e.cause }

// redactURL returns raw without userinfo, query and fragment.
func redactURL(raw string) string { return redact.URL(raw) }
