// Package redact removes credentials from text that users or operators see:
// the userinfo and the query string of every URL in a message (presigned
// URLs carry their credentials in the query), before the message reaches a
// condition, an event or a log.
//
// # Userinfo
//
// Userinfo is found without trusting it to be well formed, because a
// password that was never percent-encoded may hold spaces, quotes, angle
// brackets, backslashes or anything else that ends a URL in prose. The rule
// is applied to every "://" in the text (normally the end of a scheme):
//
//   - the authority span runs from just after "://" up to, not including,
//     the first '/', carriage return or line feed, or the end of the text;
//   - if that span holds an '@', everything from "://" through the LAST '@'
//     in it is userinfo and is removed.
//
// The next "://" always starts a span of its own (its '/' ends the previous
// span), so every URL in a message is redacted. '?' and '#' do not end the
// span: a password may hold them, and stopping there would leak the rest of
// it. Text after a URL that has a path is never touched, so in
//
//	failed to clone 'https://host/repo': user@example.com denied
//
// the address stays. The rule fails closed where it cannot tell: if a URL
// has no path and an '@' follows later on the same line, as in
// "see https://host or mail ops@example.com", the text up to that '@' goes
// ("see https://example.com"); so does a query with an '@' right after the
// host ("https://host?to=a@b" becomes "https://b"). Only a password holding '/' or a line break
// can escape it; no URL parser can find where such a password ends.
//
// Text without "://" is not a URL and keeps its '@': the scp-like form
// user@host:path that git accepts cannot carry a password (git reads
// "user:pw@host:path" as host "user"), its user name is not a secret, and
// stripping "word@" from prose would eat e-mail addresses.
//
// # Query and fragment
//
// After userinfo is gone, every word that starts with "scheme://" and ends
// at white space, a quote, a backquote or an angle bracket loses its query
// and fragment; trailing punctuation such as ".,:;)]}" stays after it.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// urlPattern finds URLs with a scheme; a match ends at white space, a quote
// character, a backquote or an angle bracket.
var urlPattern = regexp.MustCompile("[a-zA-Z][a-zA-Z0-9+.-]*://[^\\s'\"`<>]+")

// schemeSep separates a URL's scheme from its authority.
const schemeSep = "://"

// String returns s with the userinfo, query and fragment of every URL
// removed, by the rules in the package documentation.
func String(s string) string {
	return urlPattern.ReplaceAllStringFunc(stripUserinfo(s), func(match string) string {
		trimmed := strings.TrimRight(match, ".,:;)]}")
		return stripQuery(trimmed) + match[len(trimmed):]
	})
}

// URL returns the URL without userinfo, query or fragment. Userinfo is
// removed by the rule in the package documentation even when raw does not
// parse as a URL.
func URL(raw string) string {
	return stripQuery(stripUserinfo(raw))
}

// stripQuery returns raw, which has no userinfo left, without its query and
// fragment. Text that does not parse as a URL is cut at the first '?' or '#'.
func stripQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			return raw[:i]
		}
		return raw
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// stripUserinfo removes the userinfo after every "://" in s.
func stripUserinfo(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, schemeSep)
		if i < 0 {
			break
		}
		rest := s[i+len(schemeSep):]
		b.WriteString(s[:i+len(schemeSep)])
		s = rest[userinfoLen(rest):]
	}
	b.WriteString(s)
	return b.String()
}

// userinfoLen returns how many bytes at the start of rest, the text just
// after "://", are userinfo: everything through the last '@' before the
// first '/', carriage return or line feed, or 0 if there is no such '@'.
func userinfoLen(rest string) int {
	end := strings.IndexAny(rest, "/\r\n")
	if end < 0 {
		end = len(rest)
	}
	return strings.LastIndexByte(rest[:end], '@') + 1
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
