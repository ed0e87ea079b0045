package release

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/validation"
)

const (
	// capabilitiesTTL is how long the cluster's capabilities (its version
	// and API versions, which templates see as .Capabilities) are reused
	// before discovery is asked again.
	capabilitiesTTL = time.Minute
	// minResetInterval is the shortest time between two discovery resets
	// caused by a kind the RESTMapper does not know, so that a chart that
	// names an unknown kind cannot make every release rediscover the API.
	minResetInterval = 2 * time.Second
)

// Getter gives the Helm SDK its Kubernetes clients for one cluster and
// identity. It is a genericclioptions.RESTClientGetter whose expensive parts
// are built once and shared by every release and goroutine: one HTTP
// transport, one clientset, one dynamic client, one memory-cached discovery
// client, one RESTMapper (reset when it meets a kind it does not know), the
// cluster's capabilities and the manifest validators. It holds no
// namespace: each action gets its own.
type Getter struct {
	config     *rest.Config
	httpClient *http.Client
	clientset  *kubernetes.Clientset
	dynamic    *dynamic.DynamicClient
	discovery  discovery.CachedDiscoveryInterface
	mapper     *resettingMapper
	factory    *factory

	refresh   sync.Mutex // one discovery of the capabilities at a time
	mu        sync.Mutex // guards the fields below
	caps      *common.Capabilities
	capsTaken time.Time
	resets    uint64 // counts forget calls
}

var _ genericclioptions.RESTClientGetter = (*Getter)(nil)

// NewGetter builds the shared clients for the cluster that cfg reaches.
// Nothing is fetched from the cluster until the first action needs it.
func NewGetter(cfg *rest.Config) (*Getter, error) {
	if cfg == nil {
		return nil, errors.New("no REST config given")
	}
	shared, err := sharedTransportConfig(cfg)
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(shared)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client: %w", err)
	}
	g := &Getter{config: shared, httpClient: httpClient}
	if g.clientset, err = kubernetes.NewForConfigAndClient(shared, httpClient); err != nil {
		return nil, fmt.Errorf("building the clientset: %w", err)
	}
	if g.dynamic, err = dynamic.NewForConfigAndClient(shared, httpClient); err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(shared, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the discovery client: %w", err)
	}
	g.discovery = memory.NewMemCacheClient(dc)
	g.mapper = &resettingMapper{
		DeferredDiscoveryRESTMapper: restmapper.NewDeferredDiscoveryRESTMapper(g.discovery),
		onReset:                     g.forget,
	}
	g.factory = &factory{getter: g, delegate: cmdutil.NewFactory(g)}
	return g, nil
}

// sharedTransportConfig returns a copy of cfg whose Transport is built once
// from cfg (TLS, credentials, impersonation, proxy and dialer included), so
// that every client made from it, by this package or inside the Helm SDK,
// shares one connection pool even when client-go could not cache the
// transport of cfg itself.
func sharedTransportConfig(cfg *rest.Config) (*rest.Config, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP transport: %w", err)
	}
	host, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server address: %w", err)
	}
	return &rest.Config{
		Host:                      host.String(),
		APIPath:                   cfg.APIPath,
		ContentConfig:             cfg.ContentConfig,
		UserAgent:                 cfg.UserAgent,
		Transport:                 rt,
		WarningHandler:            cfg.WarningHandler,
		WarningHandlerWithContext: cfg.WarningHandlerWithContext,
		QPS:                       cfg.QPS,
		Burst:                     cfg.Burst,
		RateLimiter:               cfg.RateLimiter,
		Timeout:                   cfg.Timeout,
	}, nil
}

// ToRESTConfig returns a copy of the shared REST config.
func (g *Getter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

// ToDiscoveryClient returns the shared memory-cached discovery client.
func (g *Getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

// ToRESTMapper returns the shared RESTMapper.
func (g *Getter) ToRESTMapper() (meta.RESTMapper, error) {
	return g.mapper, nil
}

// ToRawKubeConfigLoader returns a loader of an empty kubeconfig whose
// namespace is "default": the Getter is built from a REST config, not a
// kubeconfig, and every action names its namespace.
func (g *Getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return staticClientConfig{config: g.config}
}

// Clientset returns the shared clientset.
func (g *Getter) Clientset() kubernetes.Interface {
	return g.clientset
}

// Invalidate forgets what the Getter learnt from discovery (API groups,
// kinds, capabilities, validators), for instance after CRDs were created.
func (g *Getter) Invalidate() {
	g.mapper.Reset()
}

// forget drops the capabilities and validators built from discovery; the
// mapper calls it whenever it is reset.
func (g *Getter) forget() {
	g.mu.Lock()
	g.caps = nil
	g.resets++
	g.mu.Unlock()
	g.factory.forget()
}

// capabilities returns the cluster's capabilities for one action: a copy
// that the action may change. They are taken from discovery at most once
// per capabilitiesTTL, by one goroutine at a time.
func (g *Getter) capabilities() (*common.Capabilities, error) {
	g.refresh.Lock()
	defer g.refresh.Unlock()
	g.mu.Lock()
	caps, taken := g.caps, g.capsTaken
	g.mu.Unlock()
	if caps != nil && time.Since(taken) > capabilitiesTTL {
		g.Invalidate()
		caps = nil
	}
	if caps == nil {
		g.mu.Lock()
		resets := g.resets
		g.mu.Unlock()
		var err error
		if caps, err = g.discoverCapabilities(); err != nil {
			return nil, err
		}
		g.mu.Lock()
		if g.resets == resets { // not invalidated while discovering
			g.caps, g.capsTaken = caps, time.Now()
		}
		g.mu.Unlock()
	}
	out := caps.Copy()
	out.APIVersions = slices.Clone(caps.APIVersions)
	return out, nil
}

// discoverCapabilities asks the (cached) discovery client for the server's
// version and API versions.
func (g *Getter) discoverCapabilities() (*common.Capabilities, error) {
	version, err := g.discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("getting the Kubernetes version: %w", err)
	}
	apiVersions, err := action.GetVersionSet(g.discovery)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("getting the API versions: %w", err)
	}
	return &common.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: common.KubeVersion{
			Version: version.GitVersion,
			Major:   version.Major,
			Minor:   version.Minor,
		},
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}, nil
}

// resettingMapper is a discovery-backed RESTMapper that resets itself (and
// the discovery cache under it) when asked about a kind or resource it does
// not know, at most once per minResetInterval, and then asks again.
type resettingMapper struct {
	*restmapper.DeferredDiscoveryRESTMapper
	onReset func()

	mu        sync.Mutex
	lastReset time.Time
}

var _ meta.ResettableRESTMapper = (*resettingMapper)(nil)

// Reset forgets the cached discovery information.
func (m *resettingMapper) Reset() {
	m.mu.Lock()
	m.lastReset = time.Now()
	m.mu.Unlock()
	m.DeferredDiscoveryRESTMapper.Reset()
	if m.onReset != nil {
		m.onReset()
	}
}

// retry reports whether a lookup that failed with err should be tried
// again, after resetting the mapper unless it was reset moments ago.
func (m *resettingMapper) retry(err error) bool {
	if !meta.IsNoMatchError(err) {
		return false
	}
	m.mu.Lock()
	recent := time.Since(m.lastReset) < minResetInterval
	m.mu.Unlock()
	if !recent {
		m.Reset()
	}
	return true
}

// KindFor implements meta.RESTMapper.
func (m *resettingMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	gvk, err := m.DeferredDiscoveryRESTMapper.KindFor(r)
	if err != nil && m.retry(err) {
		return m.DeferredDiscoveryRESTMapper.KindFor(r)
	}
	return gvk, err
}

// KindsFor implements meta.RESTMapper.
func (m *resettingMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	gvks, err := m.DeferredDiscoveryRESTMapper.KindsFor(r)
	if err != nil && m.retry(err) {
		return m.DeferredDiscoveryRESTMapper.KindsFor(r)
	}
	return gvks, err
}

// ResourceFor implements meta.RESTMapper.
func (m *resettingMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	gvr, err := m.DeferredDiscoveryRESTMapper.ResourceFor(r)
	if err != nil && m.retry(err) {
		return m.DeferredDiscoveryRESTMapper.ResourceFor(r)
	}
	return gvr, err
}

// ResourcesFor implements meta.RESTMapper.
func (m *resettingMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	gvrs, err := m.DeferredDiscoveryRESTMapper.ResourcesFor(r)
	if err != nil && m.retry(err) {
		return m.DeferredDiscoveryRESTMapper.ResourcesFor(r)
	}
	return gvrs, err
}

// RESTMapping implements meta.RESTMapper.
func (m *resettingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	mapping, err := m.DeferredDiscoveryRESTMapper.RESTMapping(gk, versions...)
	if err != nil && m.retry(err) {
		return m.DeferredDiscoveryRESTMapper.RESTMapping(gk, versions...)
	}
	return mapping, err
}

// RESTMappings implements meta.RESTMapper.
func (m *resettingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	mappings, err := m.DeferredDiscoveryRESTMapper.RESTMappings(gk, versions...)
	if err != nil && m.retry(err) {
		return m.DeferredDiscoveryRESTMapper.RESTMappings(gk, versions...)
	}
	return mappings, err
}

// factory is the kube.Factory that every kube.Client of a Getter shares:
// it hands out the Getter's clients instead of building new ones, and
// keeps the manifest validators (which cache what the server's OpenAPI
// says) until the Getter is invalidated.
type factory struct {
	getter   *Getter
	delegate cmdutil.Factory

	mu         sync.Mutex
	validators map[string]validation.Schema
}

// ToRESTConfig implements kube.Factory.
func (f *factory) ToRESTConfig() (*rest.Config, error) { return f.getter.ToRESTConfig() }

// ToRawKubeConfigLoader implements kube.Factory.
func (f *factory) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return f.getter.ToRawKubeConfigLoader()
}

// DynamicClient implements kube.Factory.
func (f *factory) DynamicClient() (dynamic.Interface, error) { return f.getter.dynamic, nil }

// KubernetesClientSet implements kube.Factory.
func (f *factory) KubernetesClientSet() (*kubernetes.Clientset, error) {
	return f.getter.clientset, nil
}

// NewBuilder implements kube.Factory.
func (f *factory) NewBuilder() *resource.Builder { return resource.NewBuilder(f.getter) }

// Validator implements kube.Factory with one validator per directive.
func (f *factory) Validator(directive string) (validation.Schema, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.validators[directive]; ok {
		return v, nil
	}
	inner, err := f.delegate.Validator(directive)
	if err != nil {
		return nil, fmt.Errorf("building the %s manifest validator: %w", directive, err)
	}
	v := &serialSchema{inner: inner}
	if f.validators == nil {
		f.validators = map[string]validation.Schema{}
	}
	f.validators[directive] = v
	return v, nil
}

// serialSchema validates one manifest at a time. The validator learns from
// the server's OpenAPI document of each group version (megabytes to parse)
// whether it validates fields itself, and caches the answer but not the
// work in progress: unserialized, every release installed at once would
// parse the document. A cached answer makes a validation cheap.
type serialSchema struct {
	mu    sync.Mutex
	inner validation.Schema
}

// ValidateBytes implements validation.Schema.
func (s *serialSchema) ValidateBytes(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.ValidateBytes(data)
}

// forget drops the validators.
func (f *factory) forget() {
	f.mu.Lock()
	f.validators = nil
	f.mu.Unlock()
}

// staticClientConfig is the clientcmd.ClientConfig of a Getter.
type staticClientConfig struct {
	config *rest.Config
}

// RawConfig returns an empty kubeconfig.
func (staticClientConfig) RawConfig() (clientcmdapi.Config, error) {
	return *clientcmdapi.NewConfig(), nil
}

// ClientConfig returns a copy of the REST config.
func (c staticClientConfig) ClientConfig() (*rest.Config, error) {
	return rest.CopyConfig(c.config), nil
}

// Namespace returns "default", not overridden.
func (staticClientConfig) Namespace() (string, bool, error) {
	return "default", false, nil
}

// ConfigAccess returns the default kubeconfig loading rules; nothing in
// this package writes a kubeconfig.
func (staticClientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return clientcmd.NewDefaultClientConfigLoadingRules()
}
