package kubeauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestGuard: what a guarded endpoint answers for each verdict of the API
// server's reviews (a fake API server, for the one step): the handler
// runs only when the caller authenticates and may do all it needs; a
// refusal of access names it, and a review that could not be made says
// so, to retry, without claiming the caller may not.
func TestGuard(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"
	needs := []authzv1.ResourceAttributes{{Verb: "get", Resource: "imagerepositories", Namespace: "apps", Name: "app"}}
	for _, tc := range []struct {
		name          string
		authenticated bool
		access        string // allow, deny or fail
		wantStatus    int
		wantBody      string
	}{
		{name: "allowed", authenticated: true, access: "allow", wantStatus: http.StatusOK, wantBody: "served"},
		{name: "not authenticated", access: "allow", wantStatus: http.StatusUnauthorized, wantBody: "send a bearer token"},
		{name: "denied", authenticated: true, access: "deny", wantStatus: http.StatusForbidden,
			wantBody: `bob may not get imagerepositories in the namespace \"apps\"`},
		{name: "access review failed", authenticated: true, access: "fail", wantStatus: http.StatusServiceUnavailable,
			wantBody: "Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
					switch o := obj.(type) {
					case *authv1.TokenReview:
						o.Status = authv1.TokenReviewStatus{Authenticated: tc.authenticated, User: authv1.UserInfo{Username: "bob"}}
					case *authzv1.SubjectAccessReview:
						if tc.access == "fail" {
							return errors.New("the API server is gone")
						}
						o.Status.Allowed = tc.access == "allow"
					}
					return nil
				}}).WithScheme(runtime.NewScheme()).Build()
			guard := &Guard{Tokens: &TokenReviewer{Client: c}, Access: &AccessReviewer{Client: c},
				Needs: func(*http.Request) []authzv1.ResourceAttributes { return needs }, Realm: "test"}
			h := guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("served")) }))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			g.Expect(w.Code).To(Equal(tc.wantStatus))
			g.Expect(w.Body.String()).To(ContainSubstring(tc.wantBody))
			if tc.wantStatus == http.StatusServiceUnavailable {
				g.Expect(w.Header().Get("Retry-After")).To(Equal("1"))
				g.Expect(w.Body.String()).NotTo(ContainSubstring("may not"))
			}
		})
	}
}
