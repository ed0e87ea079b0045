package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// LocalOptions configure Local.
type LocalOptions struct {
	// Addr is where the UI listens: a loopback address.
	Addr string
	// Namespace, when set, is the one namespace shown; otherwise every
	// namespace is.
	Namespace string
	// Ready is called once the UI serves, with its URL and the kinds the
	// user may not list and watch, which it leaves out.
	Ready func(url string, hidden []string)
	// Log logs the pages that could not be served.
	Log logr.Logger
}

// Local serves the UI of the cluster of cfg as its user until ctx ends:
// from a cache of its own that watches the kinds the user may list and
// watch, on a loopback address only; its actions are the user's, and the
// API server allows or refuses them.
func Local(ctx context.Context, cfg *rest.Config, o LocalOptions) error {
	if err := CheckLoopback(o.Addr); err != nil {
		return err
	}
	s := scheme.New()
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	pods, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	shown, hidden, err := watchable(ctx, c, o.Namespace)
	if err != nil {
		return err
	}
	opts := cache.Options{Scheme: s, DefaultTransform: cache.TransformStripManagedFields()}
	if o.Namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	objects, err := cache.New(cfg, opts)
	if err != nil {
		return err
	}
	changes, err := NewChanges(ctx, objects, shown)
	if err != nil {
		return err
	}
	go func() { _ = objects.Start(ctx) }()
	if !objects.WaitForCacheSync(ctx) {
		return errors.New("the objects could not be read")
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: (&Server{Reader: objects, Kinds: shown, Log: o.Log, Changes: changes, Actions: c, Live: c, Pods: pods}).Handler(),
		ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if o.Ready != nil {
		o.Ready("http://"+ln.Addr().String()+"/", hidden)
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// watchable splits the kinds into those the user of c may list and watch
// in namespace (every namespace when empty) and the names of the others.
func watchable(ctx context.Context, c client.Client, namespace string) ([]kinds.Kind, []string, error) {
	var shown []kinds.Kind
	var hidden []string
	for _, k := range kinds.All {
		mapping, err := c.RESTMapper().RESTMapping(k.GroupVersionKind().GroupKind(), k.GroupVersion.Version)
		if err != nil {
			hidden = append(hidden, k.Kind) // not installed
			continue
		}
		ok := true
		for _, verb := range []string{"list", "watch"} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb,
					Group: k.GroupVersion.Group, Resource: mapping.Resource.Resource}}}
			if err := c.Create(ctx, review); err != nil {
				return nil, nil, fmt.Errorf("asking whether you may %s %s: %w", verb, k.Kind, err)
			}
			ok = ok && review.Status.Allowed
		}
		if ok {
			shown = append(shown, k)
		} else {
			hidden = append(hidden, k.Kind)
		}
	}
	return shown, hidden, nil
}

// CheckLoopback refuses an address that is not on loopback: the UI has no
// sign-in yet, so it serves only who can reach the host itself.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q: the UI serves loopback addresses only (127.0.0.1, ::1, localhost) until it has sign-in", addr)
	}
	return nil
}
