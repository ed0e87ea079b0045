package image

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/registry"
)

// TagsHandler serves the tag store read-only over HTTP
// (GET /images/<namespace>/<name>/tags, see registry.NewHandler), with the
// tags ordered by an ImagePolicy, read through c, when the request names
// one. Every replica serves it: one that is not the leader serves the tags
// of its own store, which may be older.
func TagsHandler(c client.Reader, store *registry.Store) http.Handler {
	return registry.NewHandler(store, func(ctx context.Context, repoNamespace, repoName, policy string,
		tags iter.Seq[string], limit int) ([]string, error) {
		return orderByPolicy(ctx, c, repoNamespace, repoName, policy, tags, limit)
	})
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
