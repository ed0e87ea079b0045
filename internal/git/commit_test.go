package git

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestCommit_String(t *testing.T) {
	const h = "0123456789ABCDEF0123456789abcdef01234567"
	const lower = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		ref, want string
	}{
		{ref: "refs/heads/main", want: "main@sha1:" + lower},
		{ref: "refs/heads/feature/x", want: "feature/x@sha1:" + lower},
		{ref: "refs/tags/v1.2.0", want: "v1.2.0@sha1:" + lower},
		{ref: "refs/pull/1/head", want: "refs/pull/1/head@sha1:" + lower},
		{ref: "refs/merge-requests/7/head", want: "refs/merge-requests/7/head@sha1:" + lower},
		{ref: "", want: "sha1:" + lower},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			g := NewWithT(t)
			c := &Commit{Hash: h, Reference: tt.ref}
			g.Expect(c.String()).To(Equal(tt.want))
		})
	}
}

func TestCommit_ShortMessage(t *testing.T) {
	tests := []struct {
		name, msg, want string
	}{
		{name: "subject only", msg: "fix: a bug\n", want: "fix: a bug"},
		{name: "with body", msg: "subject\n\nbody line\n", want: "subject"},
		{name: "long", msg: strings.Repeat("a", 60), want: strings.Repeat("a", 50) + "..."},
		{name: "multibyte", msg: strings.Repeat("é", 51), want: strings.Repeat("é", 50) + "..."},
		{name: "empty", msg: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect((&Commit{Message: tt.msg}).ShortMessage()).To(Equal(tt.want))
		})
	}
}

func TestIsConcreteCommit(t *testing.T) {
	sig := &Signature{Name: "a"}
	tests := []struct {
		name string
		c    Commit
		want bool
	}{
		{name: "partial", c: Commit{Hash: "abc", Reference: "refs/heads/main"}, want: false},
		{name: "concrete", c: Commit{Hash: "abc", Author: sig, Committer: sig, Encoded: []byte("tree x")}, want: true},
		{name: "no payload", c: Commit{Hash: "abc", Author: sig, Committer: sig}, want: false},
		{name: "empty", c: Commit{}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(IsConcreteCommit(tt.c)).To(Equal(tt.want))
		})
	}
}
