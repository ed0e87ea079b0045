package image

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/registry"
)

// TagsServer serves the tag store read-only over HTTP
// (GET /images/<namespace>/<name>/tags, see registry.NewHandler), with
// the tags ordered by an ImagePolicy when the request names one. It runs
// on every replica: a replica that is not the leader serves the tags of
// its own store, which may be older.
type TagsServer struct {
	// Client reads ImagePolicies.
	Client client.Reader
	// Store holds the tags.
	Store *registry.Store
	// Addr is the address to listen on, when Listener is nil.
	Addr string
	// Listener, when set, is used instead of listening on Addr.
	Listener net.Listener
}

// SetupWithManager adds the server to mgr.
func (s *TagsServer) SetupWithManager(mgr ctrl.Manager) error {
	return mgr.Add(s)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *TagsServer) NeedLeaderElection() bool { return false }

// Start serves until ctx is done.
func (s *TagsServer) Start(ctx context.Context) error {
	ln := s.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.Addr); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler returns the HTTP handler of the server.
func (s *TagsServer) Handler() http.Handler {
	return registry.NewHandler(s.Store, s.orderByPolicy)
}

// orderByPolicy orders the tags of a repository by one of its policies:
// the first limit tags the policy ranks best, the one it elects first.
func (s *TagsServer) orderByPolicy(ctx context.Context, repoNamespace, repoName, policy string,
	tags iter.Seq[string], limit int) ([]string, error) {
	key := types.NamespacedName{Namespace: repoNamespace, Name: policy}
	if ns, name, ok := strings.Cut(policy, "/"); ok {
		key = types.NamespacedName{Namespace: ns, Name: name}
	}
	var p imagev1.ImagePolicy
	if err := s.Client.Get(ctx, key, &p); err != nil {
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
