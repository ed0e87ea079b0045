package kustomize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// ApplierFactory builds the uncached clients that apply a Kustomization's
// objects: to the local cluster with the controller's own identity, as an
// impersonated service account, or to a remote cluster from a kubeconfig.
// Applied objects are never cached, so memory does not grow with them.
type ApplierFactory struct {
	// Config reaches the local cluster.
	Config *rest.Config
	// HTTPClient is shared by the local clients.
	HTTPClient *http.Client
	// Scheme knows the built-in and the Windlass types.
	Scheme *runtime.Scheme
	// Mapper is the shared, lazily filled RESTMapper of the local cluster.
	Mapper apimeta.RESTMapper
	// DefaultServiceAccount is impersonated when a Kustomization names
	// none; empty means the controller's own identity.
	DefaultServiceAccount string

	localOnce sync.Once
	local     *target
	localErr  error

	mu      sync.Mutex
	targets map[string]*target
}

// maxCachedTargets bounds the clients kept for impersonated identities and
// remote clusters; past it the cache starts afresh.
const maxCachedTargets = 128

// target is where and as whom a Kustomization applies.
type target struct {
	client client.Client
	mapper apimeta.RESTMapper
}

// For returns the target of obj. secrets reads the kubeconfig Secret.
func (f *ApplierFactory) For(ctx context.Context, obj *kustomizev1.Kustomization, secrets client.Reader) (*target, error) {
	sa := obj.Spec.ServiceAccountName
	if sa == "" {
		sa = f.DefaultServiceAccount
	}
	if obj.Spec.KubeConfig != nil && obj.Spec.KubeConfig.SecretRef != nil {
		cfg, digest, err := remoteConfig(ctx, obj, secrets)
		if err != nil {
			return nil, err
		}
		return f.cached("remote/"+digest+"/"+obj.Namespace+"/"+obj.Spec.ServiceAccountName, func() (*target, error) {
			return newTarget(impersonate(cfg, obj.Namespace, obj.Spec.ServiceAccountName), f.Scheme, nil)
		})
	}
	if sa == "" {
		f.localOnce.Do(func() {
			var c client.Client
			c, f.localErr = client.New(f.Config, client.Options{Scheme: f.Scheme, Mapper: f.Mapper, HTTPClient: f.HTTPClient})
			f.local = &target{client: c, mapper: f.Mapper}
		})
		return f.local, f.localErr
	}
	return f.cached("local/"+obj.Namespace+"/"+sa, func() (*target, error) {
		return newTarget(impersonate(f.Config, obj.Namespace, sa), f.Scheme, f.Mapper)
	})
}

// cached returns the target stored under key, building it on first use.
func (f *ApplierFactory) cached(key string, build func() (*target, error)) (*target, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.targets[key]; ok {
		return t, nil
	}
	t, err := build()
	if err != nil {
		return nil, err
	}
	if f.targets == nil || len(f.targets) >= maxCachedTargets {
		f.targets = map[string]*target{}
	}
	f.targets[key] = t
	return t, nil
}

func newTarget(cfg *rest.Config, scheme *runtime.Scheme, mapper apimeta.RESTMapper) (*target, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	if mapper == nil {
		if mapper, err = apiutil.NewDynamicRESTMapper(cfg, httpClient); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, err
	}
	return &target{client: c, mapper: mapper}, nil
}

// impersonate returns a copy of cfg that acts as the service account sa of
// namespace ns, or cfg itself when sa is empty.
func impersonate(cfg *rest.Config, ns, sa string) *rest.Config {
	if sa == "" {
		return cfg
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)}
	return c
}

// remoteConfig reads the kubeconfig of spec.kubeConfig.secretRef, and
// returns it with the digest of its content. A
// kubeconfig that runs a command (exec or auth-provider plugins) is refused:
// it would run code in the controller with the tenant's input.
func remoteConfig(ctx context.Context, obj *kustomizev1.Kustomization, secrets client.Reader) (*rest.Config, string, error) {
	ref := obj.Spec.KubeConfig.SecretRef
	var secret corev1.Secret
	if err := secrets.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, &secret); err != nil {
		return nil, "", reconcile.Fail(kustomizev1.ReconciliationFailedReason, fmt.Errorf("reading the kubeconfig secret '%s': %w", ref.Name, err))
	}
	data, key := kubeconfigData(secret, ref.Key)
	if data == nil {
		return nil, "", reconcile.Stall(kustomizev1.ReconciliationFailedReason,
			fmt.Errorf("secret '%s' has no kubeconfig under key '%s'", ref.Name, key))
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, "", reconcile.Stall(kustomizev1.ReconciliationFailedReason, fmt.Errorf("invalid kubeconfig in secret '%s': %w", ref.Name, err))
	}
	for name, auth := range raw.AuthInfos {
		if auth.Exec != nil || auth.AuthProvider != nil {
			return nil, "", reconcile.Stall(kustomizev1.ReconciliationFailedReason,
				fmt.Errorf("kubeconfig in secret '%s': user '%s' runs a command to authenticate, which is refused", ref.Name, name))
		}
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "", reconcile.Stall(kustomizev1.ReconciliationFailedReason, fmt.Errorf("invalid kubeconfig in secret '%s': %w", ref.Name, err))
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
