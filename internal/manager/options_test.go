package manager

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
)

func TestSelectedControllers(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{name: "default is all", want: AllControllers},
		{name: "by name", in: []string{"source"}, want: []string{"source"}},
		{name: "reference names", in: []string{"source-controller", " source "}, want: []string{"source"}},
		{name: "set-up order", in: []string{"kustomize", "source"}, want: []string{"source", "kustomize"}},
		{name: "unknown", in: []string{"image"}, wantErr: `unknown controller "image": choose from source, kustomize, helm, gating, notification, image-reflector, image-automation`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Options{Controllers: tt.in}.selectedControllers()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "defaults are valid", mutate: func(*Options) {}},
		{name: "no concurrency", mutate: func(o *Options) { o.Concurrent = 0 }, wantErr: "--concurrent"},
		{name: "retry delays reversed", mutate: func(o *Options) { o.MinRetryDelay = time.Hour }, wantErr: "--min-retry-delay"},
		{name: "no records", mutate: func(o *Options) { o.Source.ArtifactRetentionRecords = 0 }, wantErr: "--artifact-retention-records"},
		{name: "negative clone size", mutate: func(o *Options) { o.Source.GitCloneMaxSize = -1 }, wantErr: "--git-clone-max-size"},
		{name: "negative index cache", mutate: func(o *Options) { o.Source.HelmIndexCacheMaxMemory = -1 }, wantErr: "--helm-index-cache-max-memory"},
		{name: "negative chart cache", mutate: func(o *Options) { o.Helm.ChartCacheMaxMemory = -1 }, wantErr: "--helm-chart-cache-max-memory"},
		{name: "jitter too large", mutate: func(o *Options) { o.IntervalJitterPercentage = 100 }, wantErr: "--interval-jitter-percentage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := DefaultOptions()
			tt.mutate(&o)
			err := o.validate()
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestStorageAddresses(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	tests := []struct {
		addr, adv, want, wantErr string
	}{
		{addr: ":9090", want: "localhost:9090"},
		{addr: "0.0.0.0:9090", want: "localhost:9090"},
		{addr: "127.0.0.1:9191", want: "127.0.0.1:9191"},
		{addr: ":9090", adv: "source-controller.flux-system.svc.cluster.local.", want: "source-controller.flux-system.svc.cluster.local."},
		{addr: "nonsense", wantErr: "invalid --storage-addr"},
	}
	for _, tt := range tests {
		t.Run(tt.addr+tt.adv, func(t *testing.T) {
			g := NewWithT(t)
			got, err := SourceOptions{StorageAddr: tt.addr, StorageAdvAddr: tt.adv}.storageAdvAddr()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestStoragePathDefaults(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("XDG_CACHE_HOME", "/tmp/cachehome")
	p, err := SourceOptions{}.storagePath()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(filepath.Join("/tmp/cachehome", "windlass", "storage")))

	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	p, err = SourceOptions{}.storagePath()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal("/data"))

	p, err = SourceOptions{StoragePath: "/srv/artifacts"}.storagePath()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal("/srv/artifacts"))
}

func TestLeaderElectionNamespace(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Options{Namespace: "flux-system"}.leaderElectionNamespace()).To(Equal("flux-system"))
	g.Expect(Options{Namespace: "a", LeaderElectionNamespace: "b"}.leaderElectionNamespace()).To(Equal("b"))
}

func TestCacheOptionsRejectsBadSelector(t *testing.T) {
	g := NewWithT(t)
	_, _, err := Options{WatchLabelSelector: "a in (b"}.cacheOptions()
	g.Expect(err).To(MatchError(ContainSubstring("invalid --watch-label-selector")))
	opts, _, err := Options{WatchLabelSelector: "sharding.fluxcd.io/key=shard1", Namespace: "ns"}.cacheOptions()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.ByObject).To(HaveLen(15), "the sources, ArtifactGenerators and ExternalArtifacts, Kustomizations, HelmReleases, Alerts, Providers, Receivers and the image kinds are sharded")
	g.Expect(opts.DefaultNamespaces).To(HaveKey("ns"))
}

func TestCacheOptionsStripManagedFields(t *testing.T) {
	g := NewWithT(t)
	opts, _, err := Options{}.cacheOptions()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.DefaultTransform).NotTo(BeNil())
	obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "a",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}}
	out, err := opts.DefaultTransform(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*sourcev1.GitRepository).ManagedFields).To(BeEmpty())
	g.Expect(out.(*sourcev1.GitRepository).Name).To(Equal("a"))
}

func TestCheckProxyEnvironment(t *testing.T) {
	tests := []struct {
		name      string
		allowHTTP bool
		env       map[string]string
		wantErr   string
	}{
		{name: "http allowed", allowHTTP: true, env: map[string]string{"HTTP_PROXY": "http://proxy:3128"}},
		{name: "no proxy", env: map[string]string{}},
		{name: "https proxy", env: map[string]string{"HTTPS_PROXY": "https://proxy:3128"}},
		{name: "plain proxy", env: map[string]string{"https_proxy": "http://user:s3cret@proxy:3128"}, wantErr: "https_proxy names a plain-HTTP proxy"},
		{name: "proxy without a scheme", env: map[string]string{"HTTP_PROXY": "proxy:3128"}, wantErr: "HTTP_PROXY"},
		{name: "socks proxy", env: map[string]string{"ALL_PROXY": "socks5://proxy:1080"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := DefaultOptions()
			o.InsecureAllowHTTP = tt.allowHTTP
			err := o.checkProxyEnvironment(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
		})
	}
}

// TestControllersTable checks that every controller of the table is whole:
// a name that serves kinds of the registry, flags and a setup; and that
// every kind of the registry is served by a controller of the table.
func TestControllersTable(t *testing.T) {
	g := NewWithT(t)
	g.Expect(AllControllers).To(Equal([]string{SourceController, KustomizeController, HelmController, GatingController, NotificationController,
		ImageReflectorController, ImageAutomationController}), "sources are set up first")
	for _, c := range controllers {
		g.Expect(c.name).NotTo(BeEmpty())
		g.Expect(kinds.OfController(c.name)).NotTo(BeEmpty(), c.name)
		g.Expect(c.flags).NotTo(BeNil(), c.name)
		g.Expect(c.setup).NotTo(BeNil(), c.name)
	}
	for _, k := range kinds.All {
		g.Expect(AllControllers).To(ContainElement(k.Controller), k.Kind)
	}
	cache, _, err := Options{WatchLabelSelector: "shard=a"}.cacheOptions()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cache.ByObject).To(HaveLen(15), "every kind of every controller is sharded, but Gates, which every shard reads")
}

// TestLeaderElectionID: all controllers share one lease whatever this build
// holds (a new controller does not rename it); a subset has its own.
func TestLeaderElectionID(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Options{}.leaderElectionID(AllControllers)).To(Equal("windlass-leader-election"))
	g.Expect(Options{Controllers: []string{"source"}}.leaderElectionID([]string{"source"})).To(Equal("windlass-source-leader-election"))
	g.Expect(Options{Controllers: []string{"kustomize", "gating"}}.leaderElectionID([]string{"kustomize", "gating"})).
		To(Equal("windlass-kustomize-gating-leader-election"))
}

func TestUIAddrIsOnLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"":               true,
		"127.0.0.1:9880": true,
		"[::1]:9880":     true,
		"localhost:9880": true,
		":9880":          false,
		"0.0.0.0:9880":   false,
		"10.0.0.1:9880":  false,
		"127.0.0.1":      false,
	} {
		err := checkUIAddr(addr)
		if ok != (err == nil) {
			t.Errorf("checkUIAddr(%q) = %v, want ok %t", addr, err, ok)
		}
	}
	o := DefaultOptions()
	o.UIAddr = ":9880"
	if _, err := o.Validate(); err == nil {
		t.Error("Validate accepts a UI on every address")
	}
}
