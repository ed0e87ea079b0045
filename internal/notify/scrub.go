package notify

import (
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Mask replaces a secret in error text.
const Mask = "***"

// Scrubber removes a Provider's secrets from error text: a service may
// quote the request's header, URL or body in its answer.
type Scrubber struct {
	secrets []string
}

// minHeaderSecret is the length under which a header value is not
// scrubbed: a short value ("1", "no") would mangle the text, and hides no
// credential.
const minHeaderSecret = 4

// NewScrubber returns the Scrubber of cfg's secrets (the token, the
// password, their basic-auth encodings with either user name, the values
// of the Secret's headers, which often carry an API key, and the last
// word of each, the credential of "Bearer <token>") and of extra ones (a
// routing key, a DSN key, a webhook URL's path).
func NewScrubber(cfg Config, extra ...string) Scrubber {
	values := append([]string{cfg.Token, cfg.Password}, extra...)
	for _, v := range cfg.Headers {
		candidates := []string{strings.TrimSpace(v)}
		if fields := strings.Fields(v); len(fields) > 1 {
			candidates = append(candidates, fields[len(fields)-1])
		}
		for _, c := range candidates {
			if len(c) >= minHeaderSecret {
				values = append(values, c)
			}
		}
	}
	var secrets []string
	for _, s := range values {
		if s != "" {
			secrets = append(secrets, s, url.PathEscape(s), url.QueryEscape(s))
		}
	}
	for _, user := range []string{cfg.BasicUsername, cfg.Username, ""} {
		for _, password := range []string{cfg.Password, cfg.Token} {
			if password != "" {
				secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
			}
		}
	}
	// The longest first, so that a secret inside another goes with it.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return Scrubber{secrets: slices.Compact(secrets)}
}

// String returns text with every secret replaced by Mask.
func (s Scrubber) String(text string) string {
	for _, secret := range s.secrets {
		text = strings.ReplaceAll(text, secret, Mask)
	}
	return text
}

// Error returns err without the secrets. A *StatusError stays one
// (callers ask it whether to retry); another error whose text held a
// secret keeps errors.Is but does not wrap the original, whose text holds
// the secrets.
func (s Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		return &StatusError{Method: se.Method, URL: s.String(se.URL), Code: se.Code, Answer: s.String(se.Answer)}
	}
	msg := err.Error()
	if clean := s.String(msg); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

// scrubbedError is an error whose text lost its secrets.
type scrubbedError struct {
	msg string
	err error
}

// Error implements error.
func (e *scrubbedError) Error() string { return e.msg }

// Is lets errors.Is see the original error (e.g. ErrLinkLocal) without
// exposing its text through Unwrap.
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }
