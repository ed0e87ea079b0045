package redact

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	. "github.com/onsi/gomega"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
		// secret must not survive in the output; empty skips the check.
		secret string
	}{
		{"userinfo", "clone of https://user:s3cret@git.example.com/org/repo.git failed", "clone of https://git.example.com/org/repo.git failed", "s3cret"},
		{"presigned query", "GET 'https://bucket.s3.example.com/a.tgz?X-Amz-Signature=abc&X-Amz-Credential=k' 403", "GET 'https://bucket.s3.example.com/a.tgz' 403", "X-Amz"},
		{"ssh user only", "ssh://git@127.0.0.1:2222/repo.git: unknown host", "ssh://127.0.0.1:2222/repo.git: unknown host", ""},
		{"ssh password", "ssh://git:s3cret@host/x: auth failed", "ssh://host/x: auth failed", "s3cret"},
		{"two urls", "two: http://a:b@h1/x and http://c:d@h2/y?t=1", "two: http://h1/x and http://h2/y", ""},
		{"two urls without paths", "http://u:s3cret1@h1 and http://v:s3cret2@h2", "http://h1 and http://h2", "s3cret"},
		{"no url", "no url here", "no url here", ""},
		{"trailing punctuation", "Get \"https://h/r?x=1\": EOF, see (https://u:p@h/y).", "Get \"https://h/r\": EOF, see (https://h/y).", ""},
		{"unparsable url", "bad%zzurl https://u:p@h/%zz", "bad%zzurl https://h/%zz", ""},
		{"unparsable url with query", "get https://h/%zz?sig=s3cret failed", "get https://h/%zz failed", "s3cret"},
		{"space", "clone 'https://user:pa ss3cret@host/r' failed", "clone 'https://host/r' failed", "ss3cret"},
		{"space at end", "https://user:s3cret pw@host", "https://host", "s3cret"},
		{"double quote", `Get "https://user:s3"cret@host/r": EOF`, `Get "https://host/r": EOF`, "cret"},
		{"single quote", "clone 'https://user:s3'cret@host/r'", "clone 'https://host/r'", "cret"},
		{"angle brackets", "at <https://u:s3<c>ret@host/x>", "at <https://host/x>", "ret"},
		{"less than without path", "https://u:p<s3cret@host", "https://host", "s3cret"},
		{"backslash", `https://user:s3\cret@host/x`, "https://host/x", `s3\cret`},
		{"backquote", "`https://user:s3`cret@host/x?q=1`", "`https://host/x`", "cret"},
		{"question mark and hash", "https://user:s3?cr#et@host/x", "https://host/x", "cr#et"},
		{"at in password", "https://user:s3@cret@host/x", "https://host/x", "cret"},
		{"percent escape", "https://user:s3%20cret@host/x", "https://host/x", "cret"},
		{"percent escaped at", "https://user%40corp:s3cr%40t@host/x", "https://host/x", "s3cr"},
		{"bad percent escape", "https://user:s3%zzcret@host/x", "https://host/x", "cret"},
		{"ipv6", "https://u:s3cret@[::1]:8080/x", "https://[::1]:8080/x", "s3cret"},
		{"ipv6 with zone", "dial https://u:s3cret@[fe80::1%25en0]:8080/x", "dial https://[fe80::1%25en0]:8080/x", "s3cret"},
		{"newline ends span", "clone https://host\nuser@example.com denied", "clone https://host\nuser@example.com denied", ""},
		{"crlf ends span", "clone https://host\r\nuser@example.com denied", "clone https://host\r\nuser@example.com denied", ""},
		{"one url a line", "https://u:s3cret1@h1\nhttps://u:s3cret2@h2/y", "https://h1\nhttps://h2/y", "s3cret"},
		{"email after url with path", "failed to clone 'https://host/repo': user@example.com denied", "failed to clone 'https://host/repo': user@example.com denied", ""},
		{"email after url with query", "failed: 'https://host/r?a=1' for user@example.com", "failed: 'https://host/r' for user@example.com", ""},
		{"email without url", "ask admin@example.com or ops@example.org", "ask admin@example.com or ops@example.org", ""},
		{"email in query", "GET https://host/api?to=a@example.com&sig=s3cret", "GET https://host/api", "s3cret"},
		{"scp-like kept", "clone git@github.com:org/repo.git: denied", "clone git@github.com:org/repo.git: denied", ""},
		{"scp-like user kept", "deploy@host:repo and https://u:s3cret@h/r", "deploy@host:repo and https://h/r", "s3cret"},
		// Fail closed: a URL without a path followed by '@' on the same line.
		{"fail closed without path", "clone 'https://host': user@example.com denied", "clone 'https://example.com denied", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := String(tt.in)
			g.Expect(got).To(Equal(tt.want))
			if tt.secret != "" {
				g.Expect(got).NotTo(ContainSubstring(tt.secret))
			}
			g.Expect(String(got)).To(Equal(got), "redaction is idempotent")
		})
	}
}

func TestURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"https://user:s3cret@host/a.tgz?sig=1#f", "https://host/a.tgz"},
		{"https://user:pa ss@host/r", "https://host/r"},
		{`https://user:p"w@host`, "https://host"},
		{"https://u:p<w@host", "https://host"},
		{"https://u:p@[::1]:8080/x", "https://[::1]:8080/x"},
		{"ssh://git:secret@host/x", "ssh://host/x"},
		{"https://h/%zz?sig=1", "https://h/%zz"},
		{"git@github.com:org/repo.git", "git@github.com:org/repo.git"},
		{"https://host/plain", "https://host/plain"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			NewWithT(t).Expect(URL(tt.in)).To(Equal(tt.want))
		})
	}
}

func TestError(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Error(nil)).To(BeNil())
	plain := errors.New("plain")
	g.Expect(Error(plain)).To(BeIdenticalTo(plain))
	orig := errors.New("at https://u:p w@h/r")
	got := Error(orig)
	g.Expect(got.Error()).To(Equal("at https://h/r"))
	g.Expect(errors.Is(got, orig)).To(BeFalse())
	g.Expect(errors.Unwrap(got)).To(BeNil())
}

// FuzzString checks that a password of printable characters other than '@',
// '/' and a line break never survives redaction of
// "https://user:<password>@host/path" in any surrounding text, and that the
// output is what the same text gives without the userinfo.
func FuzzString(f *testing.F) {
	f.Add("clone '", "pa ss", "' failed")
	f.Add("Get \"", `p"w<>\x`, "\": EOF user@example.com")
	f.Add("", "s3?cr#et", "")
	f.Add("x://a@b ", "%20%zz:;", "?q=1 https://v:w@h2")
	f.Add("user@", "'quoted'", "\nnext@line")
	f.Fuzz(func(t *testing.T, prefix, password, suffix string) {
		if !fuzzablePassword(password) {
			t.Skip()
		}
		plain := prefix + "https://host/path" + suffix
		want := String(plain)
		if strings.Contains(prefix, password) || strings.Contains(suffix, password) ||
			strings.Contains(want, password) {
			t.Skip()
		}
		got := String(prefix + "https://user:" + password + "@host/path" + suffix)
		g := NewWithT(t)
		g.Expect(got).NotTo(ContainSubstring(password))
		g.Expect(got).To(Equal(want))
	})
}

// fuzzablePassword reports whether p is valid UTF-8 of at least four
// printable characters, none of them '@' or '/'.
func fuzzablePassword(p string) bool {
	if !utf8.ValidString(p) || utf8.RuneCountInString(p) < 4 {
		return false
	}
	for _, r := range p {
		if !unicode.IsPrint(r) || r == '@' || r == '/' {
			return false
		}
	}
	return true
}
