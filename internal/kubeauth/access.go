package kubeauth

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/go-logr/logr"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// AccessReviewer decides with SubjectAccessReviews whether a user may do
// something. Its verdicts are kept as a TokenReviewer's are (AdmitTTL,
// RefuseTTL, MaxCached), under the hash of the user and the request.
type AccessReviewer struct {
	// Client creates the SubjectAccessReviews.
	Client client.Client
	// Caching tunes the verdicts kept.
	Caching
	// Log receives the refusals.
	Log logr.Logger

	once  sync.Once
	cache verdicts[struct{}]
}

// Allowed returns http.StatusOK when user may do what attrs describe, else
// the status to answer: 403 when it may not, 429 when too many new
// questions came at once, 503 when the API server could not decide.
func (a *AccessReviewer) Allowed(ctx context.Context, user authv1.UserInfo, attrs authzv1.ResourceAttributes) int {
	a.once.Do(func() { a.cache.Caching = a.Caching })
	question, err := json.Marshal(struct {
		User  authv1.UserInfo
		Attrs authzv1.ResourceAttributes
	}{user, attrs})
	if err != nil {
		return http.StatusInternalServerError
	}
	return a.cache.decide(question, func() verdict[struct{}] {
		return a.review(context.WithoutCancel(ctx), user, attrs)
	}).status
}

// review asks the API server whether user may do what attrs describe.
func (a *AccessReviewer) review(ctx context.Context, user authv1.UserInfo, attrs authzv1.ResourceAttributes) verdict[struct{}] {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	extra := make(map[string]authzv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra, ResourceAttributes: &attrs}}
	if err := a.Client.Create(ctx, sar); err != nil {
		a.Log.Error(err, "Cannot review the access of a caller", "user", user.Username)
		return verdict[struct{}]{status: http.StatusServiceUnavailable}
	}
	if !sar.Status.Allowed {
		a.Log.Info("Refused a caller the access it asked for", "user", user.Username, "verb", attrs.Verb,
			"resource", attrs.Resource, "namespace", attrs.Namespace, "name", attrs.Name)
		return verdict[struct{}]{status: http.StatusForbidden}
	}
	return verdict[struct{}]{status: http.StatusOK}
}
