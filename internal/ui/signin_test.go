package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

func TestSignerRefusesWhatItDidNotSeal(t *testing.T) {
	g := NewWithT(t)
	s := newSigner(nil)
	sealed, err := s.seal(sessionCookie, User{Name: "alice", Expires: 1})
	g.Expect(err).NotTo(HaveOccurred())
	var u User
	g.Expect(s.open(sessionCookie, sealed, &u)).To(BeTrue())
	g.Expect(u.Name).To(Equal("alice"))
	value, _, _ := strings.Cut(sealed, ".")
	forged, _ := newSigner(nil).seal(sessionCookie, User{Name: "admin"})
	for name, cookie := range map[string]string{
		"another key's":            forged,
		"another purpose's":        strings.Replace(sealed, value, value, 1) + "x",
		"no MAC":                   value,
		"the value of another MAC": strings.Split(forged, ".")[0] + "." + strings.Split(sealed, ".")[1],
	} {
		g.Expect(s.open(sessionCookie, cookie, &u)).To(BeFalse(), name)
	}
	state, _ := s.seal(oidcCookie, User{Name: "alice"})
	g.Expect(s.open(sessionCookie, state, &u)).To(BeFalse(), "a cookie of another purpose")
}

func TestLocalPath(t *testing.T) {
	for next, want := range map[string]string{"/object/Kustomization/a/b": "/object/Kustomization/a/b", "": "/",
		"https://evil.example/": "/", "//evil.example/": "/", "/\\evil.example": "/", "javascript:alert(1)": "/",
		"/\t/evil.example": "/", "/%09/evil.example": "/%09/evil.example", "/?kind=Gate&q=a": "/?kind=Gate&q=a"} {
		NewWithT(t).Expect(localPath(next)).To(Equal(want), next)
	}
}

// schemeMapper maps every kind of sch, each namespaced.
func schemeMapper(sch *runtime.Scheme) apimeta.RESTMapper {
	mapper := apimeta.NewDefaultRESTMapper(sch.PrioritizedVersionsAllGroups())
	for gvk := range sch.AllKnownTypes() {
		mapper.Add(gvk, apimeta.RESTScopeNamespace)
	}
	return mapper
}

// reviewingClient is a fake cluster whose SubjectAccessReviews allow
// verb in the namespaces of allowed, counting the reviews.
func reviewingClient(reviews *atomic.Int32, allowed map[string]bool) client.WithWatch {
	sch := scheme.New()
	return fake.NewClientBuilder().WithScheme(sch).WithRESTMapper(schemeMapper(sch)).WithObjects(testObjects()...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				reviews.Add(1)
				attrs := sar.Spec.ResourceAttributes
				sar.Status.Allowed = sar.Spec.User == "alice" && attrs.Verb != "patch" && allowed[attrs.Namespace]
				return nil
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
}

func TestSignedInUsersSeeWhatTheyMayList(t *testing.T) {
	g := NewWithT(t)
	var reviews atomic.Int32
	c := reviewingClient(&reviews, map[string]bool{"team-a": true})
	s := &Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), SignIn: &SignIn{Client: c, Tokens: true}}
	h := s.Handler()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest(http.MethodGet, "/?kind=Kustomization", nil))
	g.Expect(rec.Code).To(Equal(http.StatusSeeOther))
	g.Expect(rec.Header().Get("Location")).To(Equal("/signin?next=%2F%3Fkind%3DKustomization"))
	for path, want := range map[string]int{"/events": http.StatusUnauthorized, "/static/style.css": http.StatusOK, "/signin": http.StatusOK} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest(http.MethodGet, path, nil))
		g.Expect(rec.Code).To(Equal(want), path)
	}

	as := func(u User, path string) (int, string) {
		sealed, err := s.signer.seal(sessionCookie, u)
		g.Expect(err).NotTo(HaveOccurred())
		req := localRequest(http.MethodGet, path, nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: sealed})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	alice := User{Name: "alice", ID: "session-1", Expires: time.Now().Add(time.Hour).Unix()}
	code, body := as(alice, "/")
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`<span class="muted" id="signed-in">Signed in as alice</span>`))
	g.Expect(section(body, "attention")).To(ContainSubstring("Kustomization team-a/app"))
	g.Expect(body).NotTo(ContainSubstring("team-b"), "alice may not list in team-b")
	asked := reviews.Load()
	as(alice, "/")
	g.Expect(reviews.Load()).To(Equal(asked), "the answers are kept: a second view asks nothing")

	code, _ = as(alice, "/object/HelmRelease/team-b/cache")
	g.Expect(code).To(Equal(http.StatusNotFound), "alice may not get in team-b")
	code, _ = as(User{Name: "alice", Expires: time.Now().Add(-time.Minute).Unix()}, "/")
	g.Expect(code).To(Equal(http.StatusSeeOther), "an expired session signs in again")
	_, body = as(User{Name: "mallory", ID: "session-2", Expires: time.Now().Add(time.Hour).Unix()}, "/")
	g.Expect(section(body, "attention")).To(BeEmpty(), "mallory may list nothing")
}

func TestSignedInActionsAreReviewedFirst(t *testing.T) {
	g := NewWithT(t)
	var reviews, impersonations atomic.Int32
	c := reviewingClient(&reviews, map[string]bool{"team-a": true})
	s := &Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), SignIn: &SignIn{Client: c,
		Impersonate: func(User) (client.Client, error) { impersonations.Add(1); return c, nil }}}
	h := s.Handler()
	alice := User{Name: "alice", ID: "session-1", Expires: time.Now().Add(time.Hour).Unix()}
	sealed, err := s.signer.seal(sessionCookie, alice)
	g.Expect(err).NotTo(HaveOccurred())
	post := func(csrf string) *httptest.ResponseRecorder {
		req := localRequest(http.MethodPost, "/object/Kustomization/team-a/app/suspend", strings.NewReader("csrf="+csrf))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: sealed})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	g.Expect(post(s.csrf).Code).To(Equal(http.StatusForbidden), "a signed-in user's form carries the session's token")
	rec := post(s.signer.mac("csrf", alice.ID))
	g.Expect(rec.Code).To(Equal(http.StatusForbidden), rec.Body.String())
	g.Expect(rec.Body.String()).To(ContainSubstring(`user "alice" cannot patch kustomizations.kustomize.toolkit.fluxcd.io in the namespace "team-a"`))
	g.Expect(impersonations.Load()).To(BeZero(), "refused before any request as the user")
}

func TestUserFromClaims(t *testing.T) {
	o := &OIDC{UsernamePrefix: "oidc:", GroupsPrefix: "oidc:"}
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   User
		err    string
	}{
		{"email and groups", map[string]any{"email": "a@example.com", "email_verified": true, "groups": []any{"dev", "ops"}},
			User{Name: "oidc:a@example.com", Groups: []string{"oidc:dev", "oidc:ops"}}, ""},
		{"one group as a string", map[string]any{"email": "a@example.com", "groups": "dev"},
			User{Name: "oidc:a@example.com", Groups: []string{"oidc:dev"}}, ""},
		{"an unverified email", map[string]any{"email": "a@example.com", "email_verified": false}, User{}, "not verified"},
		{"no username", map[string]any{"sub": "123"}, User{}, `no "email"`},
		{"an email verified in words", map[string]any{"email": "a@example.com", "email_verified": "false"}, User{}, "not verified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := o.userFromClaims(tc.claims)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// TestUserFromClaimsRefusesKubernetesNames keeps a provider from naming a
// user or group that Kubernetes keeps for itself.
func TestUserFromClaimsRefusesKubernetesNames(t *testing.T) {
	g := NewWithT(t)
	bare := &OIDC{IssuerURL: "https://id.example.com", UsernamePrefix: "-"}
	_, err := bare.userFromClaims(map[string]any{"email": "system:serviceaccount:flux-system:windlass"})
	g.Expect(err).To(MatchError(ContainSubstring("reserved to Kubernetes")))
	u, err := bare.userFromClaims(map[string]any{"email": "a@example.com", "groups": []any{"system:masters", "dev"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Groups).To(Equal([]string{"dev"}), "system:masters is dropped")

	byName := &OIDC{IssuerURL: "https://id.example.com", UsernameClaim: "preferred_username"}
	u, err = byName.userFromClaims(map[string]any{"preferred_username": "system:admin"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Name).To(Equal("https://id.example.com#system:admin"), "prefixed with the issuer, as the API server does")
}
