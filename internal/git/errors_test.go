package git

import (
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"
)

func TestSanitizeURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: "https://example.com/org/repo.git", want: "https://example.com/org/repo.git"},
		{name: "user and password", in: "https://user:s3cret@example.com/repo", want: "https://example.com/repo"},
		{name: "token as user", in: "https://ghp_token@example.com:8443/repo", want: "https://example.com:8443/repo"},
		{name: "query and fragment", in: "https://example.com/a?X-Amz-Signature=abc&t=1#frag",
			want: "https://example.com/a"},
		{name: "ssh user", in: "ssh://git@example.com:2222/repo", want: "ssh://example.com:2222/repo"},
		{name: "scp-like", in: "git@example.com:org/repo.git", want: "example.com:org/repo.git"},
		{name: "unparsable with credentials", in: "https://user:p%zz@example.com/x?y", want: "https://example.com/x"},
		{name: "file", in: "file:///tmp/repo", want: "file:///tmp/repo"},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(SanitizeURL(tt.in)).To(Equal(tt.want))
		})
	}
}

func TestSanitizeError(t *testing.T) {
	base := errors.New(`Get "https://user:hunter22@example.com/repo/info/refs?token=abc": dial tcp: refused`)
	tests := []struct {
		name    string
		err     error
		secrets []string
		want    string
	}{
		{name: "nil", err: nil, want: ""},
		{name: "no URL", err: errors.New("plain failure"), want: "plain failure"},
		{name: "URL credentials and query", err: base,
			want: `Get "https://example.com/repo/info/refs": dial tcp: refused`},
		{name: "secret values", err: errors.New("server said: bad token tok-123456"), secrets: []string{"tok-123456"},
			want: "server said: bad token ***"},
		{name: "short secrets are not replaced", err: errors.New("a b c"), secrets: []string{"a", ""},
			want: "a b c"},
		{name: "wrapped", err: fmt.Errorf("cloning: %w", base),
			want: `cloning: Get "https://example.com/repo/info/refs": dial tcp: refused`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := SanitizeError(tt.err, tt.secrets...)
			if tt.err == nil {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got.Error()).To(Equal(tt.want))
			g.Expect(errors.Is(got, tt.err)).To(BeTrue())
		})
	}
}

func TestIsAuthError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "401", err: fmt.Errorf("x: %w", transport.ErrAuthenticationRequired), want: true},
		{name: "403", err: fmt.Errorf("x: %w", transport.ErrAuthorizationFailed), want: true},
		{name: "not found", err: transport.ErrRepositoryNotFound, want: false},
		{name: "unknown host key", err: fmt.Errorf("ssh: handshake failed: %w", &hostKeyError{host: "h", unknown: true}),
			want: true},
		{name: "host key mismatch", err: &hostKeyError{host: "h"}, want: true},
		{name: "ssh auth refused", err: errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted " +
			"methods [none publickey], no supported methods remain"), want: true},
		{name: "unknown CA", err: fmt.Errorf("x: %w", x509.UnknownAuthorityError{}), want: true},
		{name: "client cert refused", err: errors.New("remote error: tls: certificate required"), want: true},
		{name: "sanitized keeps the chain", err: SanitizeError(fmt.Errorf("https://u:p@h/ %w",
			transport.ErrAuthenticationRequired)), want: true},
		{name: "connection refused", err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), want: false},
		{name: "invalid auth options", err: &InvalidAuthError{Reason: "x"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(IsAuthError(tt.err)).To(Equal(tt.want))
		})
	}
}
