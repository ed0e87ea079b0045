// Package redact removes credentials from text that users or operators see:
// the userinfo and the query string of every URL in a message (presigned
// URLs carry their credentials in the query), before the message reaches a
// condition, an event or a log.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// urlPattern finds URLs with a scheme; a match ends at white space or a
// quote character.
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>]+`)

// String returns s with the userinfo and query of every URL removed.
func String(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, func(match string) string {
		trimmed := strings.TrimRight(match, ".,:;)]}")
		return URL(trimmed) + match[len(trimmed):]
	})
}

// URL returns the URL without userinfo, query or fragment. Text that does not
// parse as a URL comes back with everything between "://" and the last "@"
// of its host part removed.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return stripUserinfo(raw)
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

var userinfoPattern = regexp.MustCompile(`://[^/@]*@`)

func stripUserinfo(raw string) string {
	return userinfoPattern.ReplaceAllString(raw, "://")
}

// Error returns err with its message redacted, or nil. The result does not
// wrap err, so that nothing formats the original message later by accident.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if redacted := String(msg); redacted != msg {
		return errors.New(redacted)
	}
	return err
}
