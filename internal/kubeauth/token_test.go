package kubeauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestAllowedUsers: names are in the runtime namespace, namespace/name in
// their own; a bad name or an empty list is an error.
func TestAllowedUsers(t *testing.T) {
	g := NewWithT(t)
	users, err := AllowedUsers("flux-system", []string{"windlass", " ci/poster "})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(users).To(Equal([]string{"system:serviceaccount:flux-system:windlass", "system:serviceaccount:ci:poster"}))
	for _, bad := range [][]string{nil, {""}, {"a/b/c"}, {"Bad"}, {"/name"}, {"ns/"}} {
		_, err := AllowedUsers("flux-system", bad)
		g.Expect(err).To(HaveOccurred(), "%q", bad)
	}
}

// TestVerdictsAreBounded: at MaxCached verdicts, expired ones go first,
// then any, and the newest is kept.
func TestVerdictsAreBounded(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	a := &verdicts[struct{}]{Caching: Caching{MaxCached: 3, Now: func() time.Time { return now }}}
	a.init()
	key := func(i byte) [32]byte { return [32]byte{i} }
	a.keep(key(1), verdict[struct{}]{status: http.StatusUnauthorized})
	now = now.Add(DefaultRefuseTTL)
	for i := range byte(4) {
		a.keep(key(i+2), verdict[struct{}]{status: http.StatusOK})
	}
	g.Expect(a.kept).To(HaveLen(3))
	_, ok := a.cached(key(5))
	g.Expect(ok).To(BeTrue())
	_, ok = a.cached(key(1))
	g.Expect(ok).To(BeFalse())
}

// TestBearerToken: a JWT-shaped token of the Authorization header, or of
// the proxied header when there is no Authorization; nothing else.
func TestBearerToken(t *testing.T) {
	const jwt = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"
	for _, tc := range []struct {
		name, auth, proxied, want string
	}{
		{name: "authorization", auth: "Bearer " + jwt, want: jwt},
		{name: "any case of the scheme", auth: "bearer " + jwt, want: jwt},
		{name: "proxied", proxied: "Bearer " + jwt, want: jwt},
		{name: "authorization first", auth: "Bearer " + jwt, proxied: "Bearer a.b.c", want: jwt},
		{name: "basic", auth: "Basic dXNlcjpwYXNz"},
		{name: "not a JWT", auth: "Bearer opaque-token"},
		{name: "an empty part", auth: "Bearer a..c"},
		{name: "too long", auth: "Bearer a.b." + strings.Repeat("c", maxTokenBytes)},
		{name: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			if tc.proxied != "" {
				r.Header.Set(ProxiedAuthorizationHeader, tc.proxied)
			}
			token, ok := BearerToken(r)
			g.Expect(ok).To(Equal(tc.want != ""))
			g.Expect(token).To(Equal(tc.want))
		})
	}
}
