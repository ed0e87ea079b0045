package kubeauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create

// ProxiedAuthorizationHeader carries the caller's "Bearer <token>" when
// the request comes through the API server's service proxy, which drops
// the Authorization header of what it proxies.
const ProxiedAuthorizationHeader = "X-Windlass-Authorization"

// maxTokenBytes bounds the bearer token of a request: a service-account
// token is a JWT of about a kilobyte, an OIDC ID token a few.
const maxTokenBytes = 16 << 10

// ServiceAccountUser returns the user name that a token of the service
// account namespace/name authenticates as.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// AllowedUsers returns the user names of the service accounts listed in
// names, each "name" (in namespace) or "namespace/name".
func AllowedUsers(namespace string, names []string) ([]string, error) {
	users := make([]string, 0, len(names))
	for _, entry := range names {
		ns, name, found := strings.Cut(strings.TrimSpace(entry), "/")
		if !found {
			ns, name = namespace, ns
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("service account %q: namespace %q: %s", entry, ns, errs[0])
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("service account %q: name %q: %s", entry, name, errs[0])
		}
		users = append(users, ServiceAccountUser(ns, name))
	}
	if len(users) == 0 {
		return nil, errors.New("no service account is allowed")
	}
	return users, nil
}

// TokenReviewer authenticates the callers of an endpoint. Each request
// must carry a bearer token (Authorization, or ProxiedAuthorizationHeader
// through the API server's proxy), which a TokenReview checks, and, when
// Allowed is set, authenticate as one of its users. Verdicts are kept
// under the token's SHA-256 (never the token itself): an admission for
// AdmitTTL and a refusal for RefuseTTL, so that a burst of requests costs
// one review. Reviews of tokens not kept are rate-limited, so that a flood
// of made-up tokens costs a few reviews a second.
type TokenReviewer struct {
	// Client creates the TokenReviews.
	Client client.Client
	// Allowed, when not empty, are the only user names admitted (see
	// AllowedUsers); others are refused with 403.
	Allowed []string
	// Caching tunes the verdicts kept.
	Caching
	// Log receives the refusals the API server's reviews decide.
	Log logr.Logger

	once  sync.Once
	cache verdicts[authv1.UserInfo]
}

// Authenticate returns who r's token authenticates as and http.StatusOK,
// or the status to answer: 401 without a token or with one the API server
// does not authenticate, 403 for a user not Allowed, 429 when too many new
// tokens came at once, 503 when the API server could not review it.
func (a *TokenReviewer) Authenticate(ctx context.Context, r *http.Request) (authv1.UserInfo, int) {
	token, ok := BearerToken(r)
	if !ok {
		return authv1.UserInfo{}, http.StatusUnauthorized
	}
	a.once.Do(func() { a.cache.Caching = a.Caching })
	v := a.cache.decide([]byte(token), func() verdict[authv1.UserInfo] {
		return a.review(context.WithoutCancel(ctx), token)
	})
	return v.found, v.status
}

// BearerToken returns the token of r's Authorization header, or of its
// ProxiedAuthorizationHeader when it has none, when it is shaped like a
// JWT of bounded size.
func BearerToken(r *http.Request) (string, bool) {
	header := r.Header.Get("Authorization")
	if header == "" {
		header = r.Header.Get(ProxiedAuthorizationHeader)
	}
	scheme, token, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || len(token) > maxTokenBytes {
		return "", false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || slices.Contains(parts, "") || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// review asks the API server who token authenticates, and decides.
func (a *TokenReviewer) review(ctx context.Context, token string) verdict[authv1.UserInfo] {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr := &authv1.TokenReview{Spec: authv1.TokenReviewSpec{Token: token}}
	if err := a.Client.Create(ctx, tr); err != nil {
		a.Log.Error(err, "Cannot review the token of a caller")
		return verdict[authv1.UserInfo]{status: http.StatusServiceUnavailable}
	}
	user := tr.Status.User
	switch {
	case !tr.Status.Authenticated:
		a.Log.Info("Refused a caller: the API server does not authenticate its token")
		return verdict[authv1.UserInfo]{status: http.StatusUnauthorized}
	case len(a.Allowed) > 0 && !slices.Contains(a.Allowed, user.Username):
		a.Log.Info("Refused a caller not allowed", "user", user.Username, "allowed", a.Allowed)
		return verdict[authv1.UserInfo]{status: http.StatusForbidden, found: user}
	}
	a.Log.V(1).Info("Admitted a caller", "user", user.Username)
	return verdict[authv1.UserInfo]{status: http.StatusOK, found: user}
}
