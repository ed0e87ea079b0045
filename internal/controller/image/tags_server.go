package image

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/kubeauth"
	"github.com/windlass-dev/windlass/internal/registry"
)

// TagsHandler serves the tag store read-only over HTTP
// (GET /images/<namespace>/<name>/tags, see registry.NewHandler), with the
// tags ordered by an ImagePolicy, read through c, when the request names
// one. With a guard, only to callers who may get the ImageRepository (and
// the ImagePolicy) they ask about (see TagsAccess); without one, to
// anyone who reaches it. Every replica serves it: one that is not the
// leader serves the tags of its own store, which may be older (with
// --shards=auto, the manager passes the request on to the replica that
// holds the ImageRepository).
func TagsHandler(c client.Reader, store *registry.Store, guard *kubeauth.Guard) http.Handler {
	if guard != nil {
		g := *guard
		g.Needs, g.Realm = TagsAccess, "windlass image tags"
		return g.Wrap(tagsHandler(c, store))
	}
	return tagsHandler(c, store)
}

// tagsHandler is TagsHandler without a guard.
func tagsHandler(c client.Reader, store *registry.Store) http.Handler {
	return registry.NewHandler(store, func(ctx context.Context, repoNamespace, repoName, policy string,
		tags iter.Seq[string], limit int) ([]string, error) {
		return orderByPolicy(ctx, c, repoNamespace, repoName, policy, tags, limit)
	})
}

// TagsAccess returns what a request of the tags server needs its caller
// to be allowed: to get the ImageRepository it names and, when it orders
// by an ImagePolicy, to get that policy. It returns nothing for a path
// that names no repository (the handler answers 404).
func TagsAccess(r *http.Request) []authzv1.ResourceAttributes {
	namespace, name, ok := registry.ParseTagsPath(r.URL.Path)
	if !ok {
		return nil
	}
	group := imagev1.GroupVersion.Group
	needs := []authzv1.ResourceAttributes{{Verb: "get", Group: group, Resource: "imagerepositories", Namespace: namespace, Name: name}}
	if policy := r.URL.Query().Get("policy"); policy != "" {
		policyNamespace, policyName := namespace, policy
		if ns, n, found := strings.Cut(policy, "/"); found {
			policyNamespace, policyName = ns, n
		}
		needs = append(needs, authzv1.ResourceAttributes{Verb: "get", Group: group, Resource: "imagepolicies",
			Namespace: policyNamespace, Name: policyName})
	}
	return needs
}

// orderByPolicy orders the tags of a repository by one of its policies:
// the first limit tags the policy ranks best, the one it elects first.
func orderByPolicy(ctx context.Context, c client.Reader, repoNamespace, repoName, policy string,
	tags iter.Seq[string], limit int) ([]string, error) {
	key := types.NamespacedName{Namespace: repoNamespace, Name: policy}
	if ns, name, ok := strings.Cut(policy, "/"); ok {
		key = types.NamespacedName{Namespace: ns, Name: name}
	}
	var p imagev1.ImagePolicy
	if err := c.Get(ctx, key, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: ImagePolicy '%s' not found", registry.ErrNotFound, key)
		}
		return nil, err
	}
	if p.GetRepositoryNamespace() != repoNamespace || p.Spec.ImageRepositoryRef.Name != repoName {
		return nil, fmt.Errorf("%w: ImagePolicy '%s' does not choose from ImageRepository '%s/%s'",
			registry.ErrNotFound, key, repoNamespace, repoName)
	}
	compiled, err := compilePolicy(&p)
	if err != nil {
		return nil, fmt.Errorf("%w: ImagePolicy '%s': %w", registry.ErrBadRequest, key, err)
	}
	return compiled.Top(tags, limit), nil
}
