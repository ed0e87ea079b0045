package redact

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestString(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"clone of https://user:s3cret@git.example.com/org/repo.git failed", "clone of https://git.example.com/org/repo.git failed"},
		{"GET 'https://bucket.s3.example.com/a.tgz?X-Amz-Signature=abc&X-Amz-Credential=k' 403", "GET 'https://bucket.s3.example.com/a.tgz' 403"},
		{"ssh://git@127.0.0.1:2222/repo.git: unknown host", "ssh://127.0.0.1:2222/repo.git: unknown host"},
		{"two: http://a:b@h1/x and http://c:d@h2/y?t=1", "two: http://h1/x and http://h2/y"},
		{"no url here", "no url here"},
		{"Get \"https://h/r?x=1\": EOF, see (https://u:p@h/y).", "Get \"https://h/r\": EOF, see (https://h/y)."},
		{"bad%zzurl https://u:p@h/%zz", "bad%zzurl https://h/%zz"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got := String(tt.in)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got).NotTo(ContainSubstring("s3cret"))
		})
	}
}

func TestError(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Error(nil)).To(BeNil())
	plain := errors.New("plain")
	g.Expect(Error(plain)).To(BeIdenticalTo(plain))
	g.Expect(Error(errors.New("at https://u:pw@h/r")).Error()).To(Equal("at https://h/r"))
}
