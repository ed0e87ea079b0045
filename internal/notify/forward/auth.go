package forward

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create

// Defaults of a TokenReviewer.
const (
	// DefaultAdmitTTL is how long an admitted token is trusted without a
	// new review.
	DefaultAdmitTTL = time.Minute
	// DefaultRefuseTTL is how long a refused token is refused without a
	// new review.
	DefaultRefuseTTL = 10 * time.Second
	// DefaultMaxCached bounds the verdicts kept.
	DefaultMaxCached = 1024
	// DefaultReviewsPerSecond and DefaultReviewBurst bound the reviews of
	// tokens that are not cached.
	DefaultReviewsPerSecond = 5
	DefaultReviewBurst      = 20
)

// maxTokenBytes bounds the bearer token of a request: a service-account
// token is a JWT of about a kilobyte.
const maxTokenBytes = 16 << 10

// reviewTimeout bounds one TokenReview.
const reviewTimeout = 10 * time.Second

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

// verdict is what a review found of a token: the HTTP status to answer
// (http.StatusOK admits) and, when it authenticated, the user.
type verdict struct {
	status  int
	user    string
	expires time.Time
}

// TokenReviewer authenticates the callers of the event endpoint. Each
// request must carry a service-account token (Authorization: Bearer),
// which a TokenReview checks, of a service account in Allowed. Verdicts
// are kept under the token's SHA-256 (never the token itself): an
// admission for AdmitTTL and a refusal for RefuseTTL, so that a burst of
// events costs one review. Reviews of tokens not kept are rate-limited,
// so that a flood of made-up tokens costs a few reviews a second.
type TokenReviewer struct {
	// Client creates the TokenReviews.
	Client client.Client
	// Allowed are the user names admitted (see AllowedUsers).
	Allowed []string
	// AdmitTTL, RefuseTTL and MaxCached tune the verdicts kept
	// (DefaultAdmitTTL, DefaultRefuseTTL and DefaultMaxCached when zero).
	AdmitTTL  time.Duration
	RefuseTTL time.Duration
	MaxCached int
	// Log receives the refusals the API server's reviews decide.
	Log logr.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	once     sync.Once
	mu       sync.Mutex
	verdicts map[[sha256.Size]byte]verdict
	limiter  flowcontrol.RateLimiter
	flight   singleflight.Group
}

// Authenticate returns http.StatusOK when r carries the token of an
// allowed service account, else the status to answer: 401 without a token
// or with one the API server does not authenticate, 403 for a service
// account not allowed, 429 when too many new tokens came at once, 503
// when the API server could not review it.
func (a *TokenReviewer) Authenticate(ctx context.Context, r *http.Request) int {
	token, ok := bearerToken(r)
	if !ok {
		return http.StatusUnauthorized
	}
	a.init()
	key := sha256.Sum256([]byte(token))
	if v, ok := a.cached(key); ok {
		return v.status
	}
	v, _, _ := a.flight.Do(string(key[:]), func() (any, error) {
		if v, ok := a.cached(key); ok {
			return v, nil
		}
		if !a.limiter.TryAccept() {
			return verdict{status: http.StatusTooManyRequests}, nil
		}
		v := a.review(context.WithoutCancel(ctx), token)
		if v.status != http.StatusServiceUnavailable {
			a.keep(key, v)
		}
		return v, nil
	})
	return v.(verdict).status
}

// bearerToken returns the token of r's Authorization header when it is
// shaped like a service-account token (a JWT of bounded size).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || len(token) > maxTokenBytes {
		return "", false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || slices.Contains(parts, "") || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

func (a *TokenReviewer) init() {
	a.once.Do(func() {
		a.verdicts = map[[sha256.Size]byte]verdict{}
		a.limiter = flowcontrol.NewTokenBucketRateLimiter(DefaultReviewsPerSecond, DefaultReviewBurst)
	})
}

func (a *TokenReviewer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// cached returns the verdict kept for the token of hash key, if it holds.
func (a *TokenReviewer) cached(key [sha256.Size]byte) (verdict, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.verdicts[key]
	if !ok || !a.now().Before(v.expires) {
		return verdict{}, false
	}
	return v, true
}

// keep keeps v for the token of hash key, making room when the verdicts
// kept are at their bound.
func (a *TokenReviewer) keep(key [sha256.Size]byte, v verdict) {
	size := a.MaxCached
	if size <= 0 {
		size = DefaultMaxCached
	}
	now := a.now()
	v.expires = now.Add(a.ttl(v))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.makeRoom(now, size)
	a.verdicts[key] = v
}

// ttl is how long v is kept.
func (a *TokenReviewer) ttl(v verdict) time.Duration {
	switch {
	case v.status == http.StatusOK && a.AdmitTTL > 0:
		return a.AdmitTTL
	case v.status == http.StatusOK:
		return DefaultAdmitTTL
	case a.RefuseTTL > 0:
		return a.RefuseTTL
	}
	return DefaultRefuseTTL
}

// makeRoom drops verdicts, expired ones first, until there are fewer than
// size; a.mu is held.
func (a *TokenReviewer) makeRoom(now time.Time, size int) {
	if len(a.verdicts) < size {
		return
	}
	for k, v := range a.verdicts {
		if !now.Before(v.expires) {
			delete(a.verdicts, k)
		}
	}
	for k := range a.verdicts {
		if len(a.verdicts) < size {
			return
		}
		delete(a.verdicts, k)
	}
}

// review asks the API server who token authenticates, and decides.
func (a *TokenReviewer) review(ctx context.Context, token string) verdict {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr := &authv1.TokenReview{Spec: authv1.TokenReviewSpec{Token: token}}
	if err := a.Client.Create(ctx, tr); err != nil {
		a.Log.Error(err, "Cannot review the token of an event poster")
		return verdict{status: http.StatusServiceUnavailable}
	}
	user := tr.Status.User.Username
	switch {
	case !tr.Status.Authenticated:
		a.Log.Info("Refused events: the API server does not authenticate the poster's token")
		return verdict{status: http.StatusUnauthorized}
	case !slices.Contains(a.Allowed, user):
		a.Log.Info("Refused events from a user not allowed to post them", "user", user, "allowed", a.Allowed)
		return verdict{status: http.StatusForbidden, user: user}
	}
	a.Log.V(1).Info("Admitted an event poster", "user", user)
	return verdict{status: http.StatusOK, user: user}
}
