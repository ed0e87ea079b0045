// Package impersonation builds the clients with which a controller acts for
// a tenant: on the local cluster with the controller's own identity or as
// an impersonated service account, or on a remote cluster from a
// kubeconfig Secret (parsed by internal/kubeconfig, which refuses
// kubeconfigs that would read the controller's files or run commands).
// Kustomizations and HelmReleases apply through it.
//
// The clients are uncached: applied objects never enter the shared
// informer cache, so memory does not grow with them.
package impersonation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/kubeconfig"
	"github.com/windlass-dev/windlass/internal/restmap"
)

// ErrInvalidKubeConfig is wrapped by the errors about a kubeconfig that can
// never work as it is: missing from its Secret, malformed, or refused by
// the policy. The object's spec or the Secret must change.
var ErrInvalidKubeConfig = errors.New("invalid kubeconfig")

// ErrUnservedKubeConfig is wrapped by the error about a spec.kubeConfig that
// names its remote cluster in a way Windlass does not serve: a configMapRef
// (workload identity). Such an object must never fall through to the local
// cluster.
var ErrUnservedKubeConfig = errors.New("spec.kubeConfig.configMapRef (workload identity for remote clusters) is not served by Windlass: " +
	"use spec.kubeConfig.secretRef with a kubeconfig Secret")

// CheckServed returns an error wrapping ErrUnservedKubeConfig when kc sets
// configMapRef, and nil otherwise (no kubeConfig, or secretRef only).
func CheckServed(kc *meta.KubeConfigReference) error {
	if kc != nil && kc.ConfigMapRef != nil {
		return fmt.Errorf("%w (configMapRef '%s')", ErrUnservedKubeConfig, kc.ConfigMapRef.Name)
	}
	return nil
}

// Factory builds and caches the Targets of tenants.
type Factory struct {
	// Config reaches the local cluster.
	Config *rest.Config
	// HTTPClient is shared by the local clients.
	HTTPClient *http.Client
	// Scheme knows the built-in and the Windlass types.
	Scheme *runtime.Scheme
	// Mapper is the shared, lazily filled RESTMapper of the local cluster.
	Mapper apimeta.RESTMapper
	// DefaultServiceAccount is impersonated when an object names none, on
	// the local cluster with the controller's identity and on a remote one
	// with the kubeconfig's; empty means no impersonation.
	DefaultServiceAccount string
	// KubeConfigPolicy says which risky kubeconfig features remote
	// clusters may use (--insecure-kubeconfig-exec, -tls).
	KubeConfigPolicy kubeconfig.Policy

	localOnce sync.Once
	local     *Target
	localErr  error

	mu      sync.Mutex
	targets map[string]*Target
}

// maxCachedTargets bounds the clients kept for impersonated identities and
// remote clusters; past it the cache starts afresh.
const maxCachedTargets = 128

// Target is where and as whom an object's resources are applied.
type Target struct {
	// Client reads and writes on the target, uncached.
	Client client.Client
	// Mapper maps kinds to resources on the target.
	Mapper apimeta.RESTMapper
	// Config reaches the target as the identity, for clients that build
	// their own (the Helm SDK's).
	Config *rest.Config
	// Identity names the cluster and identity the target acts as
	// ("local/<namespace>/<service account>"), for what must be kept
	// apart between identities.
	Identity string
}

// Identity says where and as whom a tenant's object acts.
type Identity struct {
	// Namespace is the object's namespace: its service account and
	// kubeconfig Secret live there.
	Namespace string
	// ServiceAccountName is impersonated when set (spec.serviceAccountName).
	ServiceAccountName string
	// KubeConfig names a remote cluster's kubeconfig (spec.kubeConfig).
	KubeConfig *meta.KubeConfigReference
}

// For returns the target of id. secrets reads the kubeconfig Secret. A
// kubeConfig Windlass does not serve is refused (see CheckServed), never
// taken for the local cluster.
func (f *Factory) For(ctx context.Context, id Identity, secrets client.Reader) (*Target, error) {
	if err := CheckServed(id.KubeConfig); err != nil {
		return nil, err
	}
	sa := id.ServiceAccountName
	if sa == "" {
		sa = f.DefaultServiceAccount
	}
	if id.KubeConfig != nil && id.KubeConfig.SecretRef != nil {
		cfg, digest, err := f.remoteConfig(ctx, id, secrets)
		if err != nil {
			return nil, err
		}
		return f.cached("remote/"+digest+"/"+id.Namespace+"/"+sa, func() (*Target, error) {
			return newTarget(impersonate(cfg, id.Namespace, sa), f.Scheme, nil)
		})
	}
	if sa == "" {
		f.localOnce.Do(func() {
			var c client.Client
			c, f.localErr = client.New(f.Config, client.Options{Scheme: f.Scheme, Mapper: f.Mapper, HTTPClient: f.HTTPClient})
			f.local = &Target{Client: c, Mapper: f.Mapper, Config: f.Config}
		})
		return f.local, f.localErr
	}
	return f.cached("local/"+id.Namespace+"/"+sa, func() (*Target, error) {
		return newTarget(impersonate(f.Config, id.Namespace, sa), f.Scheme, f.Mapper)
	})
}

// cached returns the target stored under key, building it on first use.
func (f *Factory) cached(key string, build func() (*Target, error)) (*Target, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.targets[key]; ok {
		return t, nil
	}
	t, err := build()
	if err != nil {
		return nil, err
	}
	t.Identity = key
	if f.targets == nil || len(f.targets) >= maxCachedTargets {
		f.targets = map[string]*Target{}
	}
	f.targets[key] = t
	return t, nil
}

func newTarget(cfg *rest.Config, scheme *runtime.Scheme, mapper apimeta.RESTMapper) (*Target, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	if mapper == nil {
		if mapper, err = restmap.NewDynamic(cfg, httpClient); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, err
	}
	return &Target{Client: c, Mapper: mapper, Config: cfg}, nil
}

// ServiceAccountUser returns the user name of service account sa of
// namespace ns.
func ServiceAccountUser(ns, sa string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)
}

// impersonate returns a copy of cfg that acts as the service account sa of
// namespace ns, or cfg itself when sa is empty.
func impersonate(cfg *rest.Config, ns, sa string) *rest.Config {
	if sa == "" {
		return cfg
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: ServiceAccountUser(ns, sa)}
	return c
}

// remoteConfig reads the kubeconfig of id.KubeConfig.SecretRef, checks it
// against the policy, and returns it with the digest of its content.
func (f *Factory) remoteConfig(ctx context.Context, id Identity, secrets client.Reader) (*rest.Config, string, error) {
	ref := id.KubeConfig.SecretRef
	var secret corev1.Secret
	if err := secrets.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: ref.Name}, &secret); err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig secret '%s': %w", ref.Name, err)
	}
	data, key := kubeconfigData(secret, ref.Key)
	if data == nil {
		return nil, "", fmt.Errorf("%w: secret '%s' has no kubeconfig under key '%s'", ErrInvalidKubeConfig, ref.Name, key)
	}
	cfg, err := kubeconfig.Parse(data, f.KubeConfigPolicy)
	if err != nil {
		return nil, "", fmt.Errorf("%w: secret '%s': %w", ErrInvalidKubeConfig, ref.Name, err)
	}
	sum := sha256.Sum256(data)
	return cfg, hex.EncodeToString(sum[:]), nil
}

// kubeconfigData returns the kubeconfig in secret under key, or under
// "value" or "value.yaml" when key is empty.
func kubeconfigData(secret corev1.Secret, key string) ([]byte, string) {
	if key != "" {
		return secret.Data[key], key
	}
	for _, k := range []string{"value", "value.yaml"} {
		if d, ok := secret.Data[k]; ok {
			return d, k
		}
	}
	return nil, "value"
}
