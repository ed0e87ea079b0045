package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// How long an answer of the API server about a user's access is kept,
// and how many answers at most.
const (
	accessTTL        = time.Minute
	maxAccessAnswers = 10000
)

// access answers whether users may do a verb on a resource in a
// namespace, by SubjectAccessReviews, whose answers it keeps a minute: a
// page view asks the API server nothing it asked in the last minute.
type access struct {
	client client.Client
	now    func() time.Time

	mu      sync.Mutex
	answers map[string]answer
}

// answer is one review's result and when it came.
type answer struct {
	allowed bool
	at      time.Time
}

// newAccess returns an access that reviews with c.
func newAccess(c client.Client, now func() time.Time) *access {
	return &access{client: c, now: now, answers: map[string]answer{}}
}

// may reports whether u may do verb on resource in namespace (every
// namespace when empty), or on the object name when not empty. A user
// who may do it in every namespace may do it in each.
func (a *access) may(ctx context.Context, u User, verb string, resource schema.GroupResource, namespace, name string) (bool, error) {
	if allowed, err := a.review(ctx, u, verb, resource, "", ""); allowed || err != nil || namespace == "" {
		return allowed, err
	}
	if allowed, err := a.review(ctx, u, verb, resource, namespace, ""); allowed || err != nil || name == "" {
		return allowed, err
	}
	return a.review(ctx, u, verb, resource, namespace, name)
}

// review asks the API server, or remembers its answer.
func (a *access) review(ctx context.Context, u User, verb string, resource schema.GroupResource, namespace, name string) (bool, error) {
	key := strings.Join([]string{u.Name, strings.Join(u.Groups, ","), verb, resource.String(), namespace, name}, "\x00")
	now := a.now()
	a.mu.Lock()
	got, ok := a.answers[key]
	a.mu.Unlock()
	if ok && now.Sub(got.at) < accessTTL {
		return got.allowed, nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: u.Name, Groups: u.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: resource.Group,
			Resource: resource.Resource, Name: name}}}
	if err := a.client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("reviewing the access of %s: %w", u.Name, err)
	}
	a.mu.Lock()
	if len(a.answers) >= maxAccessAnswers {
		clear(a.answers)
	}
	a.answers[key] = answer{allowed: sar.Status.Allowed, at: now}
	a.mu.Unlock()
	return sar.Status.Allowed, nil
}

// accessReader reads through inner what the request's user may read: a
// list keeps the objects of the namespaces where the user may list the
// kind, a get finds only what the user may get. Without a user in the
// context (no sign-in), it reads nothing.
type accessReader struct {
	inner  client.Reader
	access *access
	scheme *runtime.Scheme
	mapper apimeta.RESTMapper
}

// resourceOf returns the resource of obj's kind.
func (a *accessReader) resourceOf(obj runtime.Object) (schema.GroupResource, error) {
	gvk, err := apiutil.GVKForObject(obj, a.scheme)
	if err != nil {
		return schema.GroupResource{}, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupResource{}, err
	}
	return m.Resource.GroupResource(), nil
}

// Get reads obj when the user may get it; otherwise it is not found.
func (a *accessReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := userFrom(ctx)
	resource, err := a.resourceOf(obj)
	if err != nil || !ok {
		return fmt.Errorf("reading %s: no user or no resource: %w", key, err)
	}
	allowed, err := a.access.may(ctx, u, "get", resource, key.Namespace, key.Name)
	if err != nil {
		return err
	}
	if !allowed {
		return apierrors.NewNotFound(resource, key.Name)
	}
	return a.inner.Get(ctx, key, obj, opts...)
}

// List lists the objects of list's kind in the namespaces where the user
// may list them.
func (a *accessReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	u, ok := userFrom(ctx)
	resource, err := a.resourceOf(list)
	if err != nil || !ok {
		return fmt.Errorf("listing: no user or no resource: %w", err)
	}
	if err := a.inner.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		obj, isObject := item.(client.Object)
		if !isObject {
			continue
		}
		allowed, err := a.access.may(ctx, u, "list", resource, obj.GetNamespace(), "")
		if err != nil {
			return err
		}
		if allowed {
			kept = append(kept, item)
		}
	}
	return apimeta.SetList(list, kept)
}
