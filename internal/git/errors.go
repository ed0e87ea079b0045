package git

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// InvalidAuthError reports credentials or transport settings that can never
// work, such as an SSH identity without known_hosts. It is a spec error: the
// controller reports it as Stalled rather than retrying.
type InvalidAuthError struct {
	// Reason says what is wrong, without any secret value.
	Reason string
}

// Error implements error.
func (e *InvalidAuthError) Error() string {
	return "invalid auth options: " + e.Reason
}

// InvalidOptionsError reports checkout options that can never work, such as
// an invalid semver range or a sparse checkout path that leaves the
// repository. Like [InvalidAuthError] it is a spec error.
type InvalidOptionsError struct {
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *InvalidOptionsError) Error() string {
	return "invalid checkout options: " + e.Reason
}

// urlPattern finds URL-like words in error text.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// SanitizeURL returns s without the credentials a URL can carry: the user
// information (user:password@), the query string and the fragment. Text that
// does not parse as a URL loses everything before an '@' in its authority and
// everything from the first '?' or '#'.
func SanitizeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return sanitizeRawURL(s)
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// sanitizeRawURL strips credentials from text that url.Parse rejects,
// including the scp-like form user@host:path.
func sanitizeRawURL(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	scheme, rest, found := strings.Cut(s, "://")
	if !found {
		scheme, rest = "", s
	}
	authority, path, hasPath := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	out := authority
	if hasPath {
		out += "/" + path
	}
	if found {
		out = scheme + "://" + out
	}
	return out
}

// sanitizedError carries a cleaned message while keeping the original error
// in the chain for errors.Is and errors.As.
type sanitizedError struct {
	msg string
	err error
}

func (e *sanitizedError) Error() string { return e.msg }
func (e *sanitizedError) Unwrap() error { return e.err }

// SanitizeError returns err with every URL in its message passed through
// [SanitizeURL] and every occurrence of the given secret values (of four
// characters or more) replaced by "***". The original error stays reachable
// through errors.Is, errors.As and Unwrap, so classification still works; its
// text must not be shown. SanitizeError returns nil for a nil error.
func SanitizeError(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := SanitizeString(err.Error(), secrets...)
	if msg == err.Error() {
		return err
	}
	return &sanitizedError{msg: msg, err: err}
}

// SanitizeString applies the rules of [SanitizeError] to a piece of text.
func SanitizeString(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "***")
		}
	}
	return urlPattern.ReplaceAllStringFunc(s, SanitizeURL)
}

// withoutEmptyReason drops the ": " that go-git leaves at the end of a
// refusal over HTTP (404, 401, 403) whose answer had no body, as in
// "repository not found: ".
func withoutEmptyReason(err error) error {
	if err == nil || !(errors.Is(err, transport.ErrRepositoryNotFound) ||
		errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed)) {
		return err
	}
	msg := strings.TrimRight(err.Error(), " ")
	if trimmed, ok := strings.CutSuffix(msg, ":"); ok {
		return &sanitizedError{msg: trimmed, err: err}
	}
	return err
}

// hostKeyError reports an SSH host key that known_hosts does not trust.
type hostKeyError struct {
	host    string
	unknown bool
}

func (e *hostKeyError) Error() string {
	if e.unknown {
		return "ssh: host " + e.host + " is not in known_hosts"
	}
	return "ssh: host key of " + e.host + " does not match known_hosts"
}

// IsAuthError reports whether err means the remote refused the credentials
// (HTTP 401 or 403, SSH authentication failure, a client certificate the
// server rejected) or the remote could not be trusted (SSH host key unknown or
// mismatched, TLS certificate not signed by a trusted CA or issued for another
// host).
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, transport.ErrAuthenticationRequired) ||
		errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrInvalidAuthMethod) {
		return true
	}
	var hk *hostKeyError
	if errors.As(err, &hk) {
		return true
	}
	return isTLSTrustError(err) || isSSHAuthMessage(err.Error())
}

// isTLSTrustError reports certificate verification failures on either side.
func isTLSTrustError(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &verify) {
		return true
	}
	// Alerts 42 (bad_certificate), 43 (unsupported_certificate), 44
	// (revoked), 45 (expired), 46 (unknown), 48 (unknown_ca) and 116
	// (certificate_required) are a server refusing our client certificate.
	if errors.As(err, &alert) {
		switch alert {
		case 42, 43, 44, 45, 46, 48, 116:
			return true
		}
	}
	msg := err.Error()
	return strings.Contains(msg, "tls: certificate required") ||
		strings.Contains(msg, "tls: bad certificate")
}

// isSSHAuthMessage recognises x/crypto/ssh authentication failures, which are
// untyped.
func isSSHAuthMessage(msg string) bool {
	return strings.Contains(msg, "ssh: unable to authenticate") ||
		strings.Contains(msg, "ssh: no auth passed yet")
}
