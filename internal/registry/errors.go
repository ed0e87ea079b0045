package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Classes of errors, for errors.Is.
var (
	// ErrNotFound is wrapped by the errors of a repository, tag or policy
	// that does not exist: the registry answered 404, nothing is stored
	// for an ImageRepository, or a PolicyOrder knows no such policy.
	ErrNotFound = errors.New("not found")
	// ErrBadRequest is wrapped by the errors of a PolicyOrder that refuses
	// its arguments; the handler answers them 400 Bad Request.
	ErrBadRequest = errors.New("bad request")
	// ErrAuth is wrapped by the errors of a registry that refused the
	// credentials (401 Unauthorized) or the access (403 Forbidden).
	ErrAuth = errors.New("access denied")
)

// IsAuthError tells whether err is a refusal of the credentials or of the
// access by the registry.
func IsAuthError(err error) bool { return errors.Is(err, ErrAuth) }

// IsNotFound tells whether err says that a repository, a tag or a stored
// tag list does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// InvalidSpecError is a fault of the ImageRepository's spec or of one of
// its Secrets. It is terminal: the object or the Secret must change before
// a retry can succeed. It never quotes a credential.
type InvalidSpecError struct {
	// Field is the API path of the faulty field, e.g. "exclusionList[1]"
	// or "secretRef".
	Field string
	// Err says what is wrong.
	Err error
}

// Error names the field and the fault.
func (e *InvalidSpecError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the fault.
func (e *InvalidSpecError) Unwrap() error { return e.Err }

// invalidSpec returns an *InvalidSpecError of field.
func invalidSpec(field string, err error) error {
	return &InvalidSpecError{Field: field, Err: err}
}

// registryError is a failed registry call, described on one line without
// credentials. It does not wrap the original error, so that nothing can
// format the original message later by accident; it wraps its class
// (ErrAuth, ErrNotFound, context.DeadlineExceeded) when it has one.
type registryError struct {
	msg   string
	class error
}

func (e *registryError) Error() string { return e.msg }
func (e *registryError) Unwrap() error { return e.class }

// authHeaderPattern finds the values of Authorization headers quoted in a
// message.
var authHeaderPattern = regexp.MustCompile(`(?i)\b(basic|bearer)\s+[A-Za-z0-9._~+/=-]{8,}`)

// scrubber removes credentials from messages: the values it holds (the
// password, tokens, the basic Authorization value and the proxy's
// password), Authorization header values and the userinfo and query of
// URLs (internal/redact).
type scrubber struct{ secrets []string }

// add records credential values; empty values are ignored.
func (s *scrubber) add(values ...string) {
	for _, v := range values {
		if v != "" {
			s.secrets = append(s.secrets, v)
		}
	}
}

// addBasic records a user and password and their basic Authorization
// value.
func (s *scrubber) addBasic(user, pass string) {
	if pass != "" {
		s.add(pass, base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	}
}

// clean returns msg without credentials. Longer secrets go first, so that
// a secret holding a shorter one is not left half visible.
func (s *scrubber) clean(msg string) string {
	secrets := slices.Clone(s.secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, v := range secrets {
		msg = strings.ReplaceAll(msg, v, "***")
	}
	msg = authHeaderPattern.ReplaceAllString(msg, "$1 ***")
	return redact.String(msg)
}

// fail describes a failed registry call: what was being done, the first
// line of the cause (or what to check, for the HTTP statuses users can
// fix) and its class, without credentials.
func (s *scrubber) fail(what string, err error, timeout time.Duration) error {
	class, detail := classify(err, timeout)
	line, _, _ := strings.Cut(detail, "\n")
	return &registryError{msg: s.clean(what + ": " + line), class: class}
}

// classify returns the class of a registry error and what to tell users.
func classify(err error, timeout time.Duration) (error, string) {
	var terr *transport.Error
	var tooLarge *httptransport.ResponseTooLargeError
	switch {
	case errors.As(err, &terr) && terr.StatusCode == 401:
		return ErrAuth, "the registry refused the credentials (401 Unauthorized): check the secretRef's .dockerconfigjson entry for this registry"
	case errors.As(err, &terr) && terr.StatusCode == 403:
		return ErrAuth, "the registry denied access (403 Forbidden): check that the credentials may pull this repository"
	case errors.As(err, &terr) && (terr.StatusCode == 404 || hasCode(terr, transport.NameUnknownErrorCode, transport.ManifestUnknownErrorCode)):
		return ErrNotFound, "not found (404): check the image name"
	case errors.As(err, &tooLarge):
		return nil, tooLarge.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded, fmt.Sprintf("no answer within the timeout of %s", timeout)
	}
	return nil, err.Error()
}

// hasCode tells whether the registry's error body holds one of codes.
func hasCode(terr *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range terr.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}
