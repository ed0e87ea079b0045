package manager

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/build"
	gatingctrl "github.com/windlass-dev/windlass/internal/controller/gating"
	helmctrl "github.com/windlass-dev/windlass/internal/controller/helm"
	kustomizectrl "github.com/windlass-dev/windlass/internal/controller/kustomize"
	sourcectrl "github.com/windlass-dev/windlass/internal/controller/source"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/helm/chart"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/helm/sandbox"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/kubeconfig"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/versions"
)

// Controller names: what --controllers calls each controller (see
// internal/kinds for the kinds each serves).
const (
	SourceController          = kinds.SourceController
	KustomizeController       = kinds.KustomizeController
	HelmController            = kinds.HelmController
	GatingController          = kinds.GatingController
	NotificationController    = kinds.NotificationController
	ImageReflectorController  = kinds.ImageReflectorController
	ImageAutomationController = kinds.ImageAutomationController
)

// controller is one controller the manager can run: adding a controller
// to Windlass is one entry in controllers, with its options type in
// Options and its flags here.
type controller struct {
	// name is what --controllers calls it; internal/kinds says which
	// kinds it serves.
	name string
	// flags binds the controller's own flags to its part of o.
	flags func(fs *pflag.FlagSet, o *Options)
	// setup registers its reconcilers with the manager.
	setup func(m *Manager, ctx context.Context, opts Options) error
}

// SourceOptions are the options of the source controller.
type SourceOptions struct {
	StoragePath              string
	StorageAddr              string
	StorageAdvAddr           string
	ArtifactRetentionTTL     time.Duration
	ArtifactRetentionRecords int
	// GitCloneMaxSize, when positive, bounds each git clone in bytes
	// received, uncompressed objects and files checked out; zero keeps the
	// git package's defaults.
	GitCloneMaxSize int64
	// GitClonesMaxMemory, when positive, bounds what all git clones hold
	// in memory together; zero keeps the git package's default.
	GitClonesMaxMemory int64
	// FetchMaxSize, when positive, bounds an OCI layer and the objects of
	// a bucket, downloaded and extracted; zero means 100 MiB.
	FetchMaxSize int64
	// HelmIndexMaxSize, when positive, bounds a Helm repository index;
	// zero keeps the repository package's default.
	HelmIndexMaxSize int64
	// HelmChartFileMaxSize, when positive, bounds each file of a chart
	// built by a HelmChart; zero keeps the chart package's default.
	HelmChartFileMaxSize int64
	// HelmIndexCacheMaxMemory, when positive, bounds the estimated memory
	// of the parsed Helm repository indexes kept; zero keeps the source
	// controller's default.
	HelmIndexCacheMaxMemory int64
	// HelmIndexParseMaxMemory, when positive, bounds the estimated memory
	// of the Helm repository indexes being parsed; zero keeps the
	// repository package's default.
	HelmIndexParseMaxMemory int64
}

func (o *SourceOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.StoragePath, "storage-path", "", "folder of the artifact storage (default /data in a cluster, else the user's cache folder)")
	fs.StringVar(&o.StorageAddr, "storage-addr", o.StorageAddr, "address the artifacts are served on")
	fs.StringVar(&o.StorageAdvAddr, "storage-adv-addr", "", "address advertised in artifact URLs (default: the storage address with this host's name); with --shards=auto, an address other than this replica's own is the one the replicas share (a Service)")
	fs.DurationVar(&o.ArtifactRetentionTTL, "artifact-retention-ttl", o.ArtifactRetentionTTL, "how long superseded artifacts are kept")
	fs.IntVar(&o.ArtifactRetentionRecords, "artifact-retention-records", o.ArtifactRetentionRecords, "how many artifacts are kept per object")
	fs.Int64Var(&o.GitCloneMaxSize, "git-clone-max-size", 0, "bytes a git clone may receive, inflate and check out, each (0: 1 GiB received, 2 GiB of objects, 2 GiB checked out)")
	fs.Int64Var(&o.FetchMaxSize, "fetch-max-size", 0, "bytes an OCI artifact's layer or a bucket's objects may hold, downloaded and extracted (0: 100 MiB)")
	fs.Int64Var(&o.GitClonesMaxMemory, "git-clones-max-memory", 0, "bytes all git clones in progress may hold in memory together; a clone past it is retried (0: 2 GiB)")
	fs.Int64Var(&o.HelmIndexMaxSize, "helm-index-max-size", repository.DefaultMaxIndexSize, "bytes a Helm repository index may hold")
	fs.Int64Var(&o.HelmChartFileMaxSize, "helm-chart-file-max-size", chart.DefaultMaxFileSize, "bytes each file of a chart that a HelmChart builds may hold, uncompressed")
	fs.Int64Var(&o.HelmIndexCacheMaxMemory, "helm-index-cache-max-memory", sourcectrl.DefaultHelmIndexCacheMaxMemory,
		"estimated bytes of memory the parsed Helm repository indexes kept for the next HelmCharts may hold together (0: the default)")
	fs.Int64Var(&o.HelmIndexParseMaxMemory, "helm-index-parse-max-memory", repository.DefaultParseMaxMemory,
		"estimated bytes of memory the Helm repository indexes being parsed may use together (a YAML index takes about 10 times its size); parses past it wait for their turn, and an index that alone needs more fails (0: the default)")
}

// KustomizeOptions are the options of the kustomize controller.
type KustomizeOptions struct {
	// NoRemoteBases refuses remote kustomize bases.
	NoRemoteBases bool
	// DefaultServiceAccount is impersonated by Kustomizations that name no
	// service account.
	DefaultServiceAccount string
	// InsecureKubeconfigExec lets remote-cluster kubeconfigs run exec and
	// auth-provider plugins (refused by default: they run a tenant's
	// command in the controller).
	InsecureKubeconfigExec bool
	// InsecureKubeconfigTLS lets remote-cluster kubeconfigs skip TLS
	// verification or use plain HTTP (refused by default).
	InsecureKubeconfigTLS bool
	// Build bounds the kustomize builds: which run in a child process,
	// and the limits of those.
	Build build.Limits
}

func (o *KustomizeOptions) bindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.NoRemoteBases, "no-remote-bases", false, "refuse kustomize remote bases")
	fs.StringVar(&o.DefaultServiceAccount, "default-service-account", "", "service account impersonated by Kustomizations and HelmReleases that name none")
	fs.BoolVar(&o.InsecureKubeconfigExec, "insecure-kubeconfig-exec", false, "allow remote-cluster kubeconfigs to run exec and auth-provider plugins in the controller")
	fs.BoolVar(&o.InsecureKubeconfigTLS, "insecure-kubeconfig-tls", false, "allow remote-cluster kubeconfigs with insecure-skip-tls-verify or plain-HTTP servers")
	fs.Int64Var(&o.Build.InProcess, "kustomize-build-in-process-max-input", build.DefaultInProcess,
		"bytes of input (kustomization files and the files they reach) up to which a kustomize build runs in the controller's process; larger builds run in a process of their own (-1: every build)")
	fs.Int64Var(&o.Build.Memory, "kustomize-build-max-memory", build.DefaultMemory, "bytes of memory the process of one kustomize build may use")
	fs.Int64Var(&o.Build.Output, "kustomize-build-max-output", build.DefaultOutput, "bytes the manifests built by one kustomize build in a process of its own may hold")
	fs.IntVar(&o.Build.Concurrency, "kustomize-build-concurrency", build.DefaultConcurrency, "how many kustomize builds run at once in processes of their own")
	fs.DurationVar(&o.Build.Time, "kustomize-build-timeout", build.DefaultTime, "the most time one kustomize build in a process of its own may take (within the Kustomization's spec.timeout)")
}

// HelmOptions are the options of the helm controller.
type HelmOptions struct {
	// Concurrent is how many HelmReleases are reconciled at once; a Helm
	// action mostly waits for the cluster, so it is more than --concurrent.
	Concurrent int
	// MaxChartSize bounds a packaged chart read from an artifact.
	MaxChartSize int64
	// ChartCacheMaxMemory, when positive, bounds the estimated memory of
	// the loaded charts kept for the next reconciliations; zero keeps the
	// helm controller's default.
	ChartCacheMaxMemory int64
	// Render bounds each render of a chart's templates, which runs in a
	// child process.
	Render sandbox.Limits
}

func (o *HelmOptions) bindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Concurrent, "helm-concurrent", 16, "how many HelmReleases are installed, upgraded or checked at once")
	fs.Int64Var(&o.MaxChartSize, "helm-chart-max-size", helmctrl.DefaultMaxChartSize, "bytes a packaged chart may hold")
	fs.Int64Var(&o.ChartCacheMaxMemory, "helm-chart-cache-max-memory", helmctrl.DefaultChartCacheMaxMemory,
		"estimated bytes of memory the loaded charts kept for the next HelmRelease reconciliations may hold together (0: the default)")
	fs.Int64Var(&o.Render.Memory, "helm-render-max-memory", sandbox.DefaultMemory, "bytes of memory the process that renders one chart's templates may use")
	fs.Int64Var(&o.Render.Output, "helm-render-max-output", sandbox.DefaultOutput, "bytes the manifests rendered from one chart may hold")
	fs.IntVar(&o.Render.Concurrency, "helm-render-concurrency", sandbox.DefaultConcurrency, "how many charts are rendered at once, each in a process of its own")
	fs.DurationVar(&o.Render.Time, "helm-render-timeout", sandbox.DefaultTime, "the most time one chart's templates may take to render (within the release's spec.timeout)")
}

// BindControllerFlags binds the flags of every controller to o.
func BindControllerFlags(fs *pflag.FlagSet, o *Options) {
	for _, c := range controllers {
		c.flags(fs, o)
	}
}

// controllers are every controller of this build, in the order they are
// set up: sources first, so that appliers in the same process read
// artifacts from storage directly.
var controllers = []controller{
	{
		name:  SourceController,
		flags: func(fs *pflag.FlagSet, o *Options) { o.Source.bindFlags(fs) },
		setup: (*Manager).setupSource,
	},
	{
		name:  KustomizeController,
		flags: func(fs *pflag.FlagSet, o *Options) { o.Kustomize.bindFlags(fs) },
		setup: (*Manager).setupKustomize,
	},
	{
		name:  HelmController,
		flags: func(fs *pflag.FlagSet, o *Options) { o.Helm.bindFlags(fs) },
		setup: (*Manager).setupHelm,
	},
	{
		name:  GatingController,
		flags: func(*pflag.FlagSet, *Options) {},
		setup: (*Manager).setupGating,
	},
	{
		name:  NotificationController,
		flags: func(fs *pflag.FlagSet, o *Options) { o.Notification.bindFlags(fs) },
		setup: (*Manager).setupNotification,
	},
	{
		name:  ImageReflectorController,
		flags: func(fs *pflag.FlagSet, o *Options) { o.Image.bindFlags(fs) },
		setup: (*Manager).setupImageReflector,
	},
	{
		name:  ImageAutomationController,
		flags: func(*pflag.FlagSet, *Options) {},
		setup: (*Manager).setupImageAutomation,
	},
}

// AllControllers lists the names of every controller of this build, in
// the order they are set up.
var AllControllers = controllerNames()

func controllerNames() []string {
	names := make([]string, 0, len(controllers))
	for _, c := range controllers {
		names = append(names, c.name)
	}
	return names
}

// events returns the event recorder of the controller called name, as the
// reference names its controllers ("source-controller"); its events go to
// the notification controller too (eventSink).
func (m *Manager) events(name string) *event.Recorder {
	return &event.Recorder{Kubernetes: m.GetEventRecorder(name + "-controller"), Sink: m.eventSink(name + "-controller")}
}

func (m *Manager) setupSource(ctx context.Context, opts Options) error {
	if err := m.setupStorage(opts); err != nil {
		return err
	}
	git.SetMaxMemoryBytes(opts.Source.GitClonesMaxMemory)
	repository.SetParseMaxMemory(opts.Source.HelmIndexParseMaxMemory)
	r := &sourcectrl.GitRepositoryReconciler{
		Client:               m.GetClient(),
		Events:               m.events(SourceController),
		Storage:              m.Storage,
		JitterPercent:        opts.IntervalJitterPercentage,
		DependencyRequeue:    opts.RequeueDependency,
		MaxCloneSize:         opts.Source.GitCloneMaxSize,
		AllowInsecureHTTP:    opts.InsecureAllowHTTP,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	// A GitRepository consumes the artifacts of those it includes.
	if err := r.SetupWithManager(ctx, m, m.consumerOptions(opts)); err != nil {
		return err
	}
	oci := &sourcectrl.OCIRepositoryReconciler{
		Client:               m.GetClient(),
		Events:               m.events(SourceController),
		Storage:              m.Storage,
		JitterPercent:        opts.IntervalJitterPercentage,
		MaxLayerSize:         opts.Source.FetchMaxSize,
		AllowInsecureHTTP:    opts.InsecureAllowHTTP,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	if err := oci.SetupWithManager(ctx, m, opts.controllerOptions()); err != nil {
		return err
	}
	b := &sourcectrl.BucketReconciler{
		Client:               m.GetClient(),
		Events:               m.events(SourceController),
		Storage:              m.Storage,
		JitterPercent:        opts.IntervalJitterPercentage,
		MaxSize:              opts.Source.FetchMaxSize,
		AllowInsecureHTTP:    opts.InsecureAllowHTTP,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	if err := b.SetupWithManager(ctx, m, opts.controllerOptions()); err != nil {
		return err
	}
	return m.setupHelmSources(ctx, opts)
}

// setupHelmSources sets up the HelmRepository and HelmChart reconcilers,
// which share one cache of parsed repository indexes, and the
// ArtifactGenerator reconciler, which may take HelmCharts.
func (m *Manager) setupHelmSources(ctx context.Context, opts Options) error {
	indexMemory := opts.Source.HelmIndexCacheMaxMemory
	if indexMemory <= 0 {
		indexMemory = sourcectrl.DefaultHelmIndexCacheMaxMemory
	}
	m.HelmIndexes = repository.NewIndexCache(sourcectrl.DefaultHelmIndexCacheSize, indexMemory, sourcectrl.DefaultHelmIndexCacheTTL)
	repo := &sourcectrl.HelmRepositoryReconciler{
		Client:               m.GetClient(),
		Events:               m.events(SourceController),
		Storage:              m.Storage,
		IndexCache:           m.HelmIndexes,
		MaxIndexSize:         opts.Source.HelmIndexMaxSize,
		JitterPercent:        opts.IntervalJitterPercentage,
		AllowInsecureHTTP:    opts.InsecureAllowHTTP,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	if err := repo.SetupWithManager(ctx, m, opts.controllerOptions()); err != nil {
		return err
	}
	hc := &sourcectrl.HelmChartReconciler{
		Client:               m.GetClient(),
		Events:               m.events(SourceController),
		Storage:              m.Storage,
		Remote:               m.chartSourceArtifacts(opts),
		IndexCache:           m.HelmIndexes,
		MaxIndexSize:         opts.Source.HelmIndexMaxSize,
		JitterPercent:        opts.IntervalJitterPercentage,
		DependencyRequeue:    opts.RequeueDependency,
		ChartLimits:          chart.Limits{MaxChartSize: opts.Helm.MaxChartSize, MaxFileSize: opts.Source.HelmChartFileMaxSize},
		AllowInsecureHTTP:    opts.InsecureAllowHTTP,
		AllowLoopback:        opts.AllowLoopback,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	if err := hc.SetupWithManager(ctx, m, opts.controllerOptions()); err != nil {
		return err
	}
	ag := &sourcectrl.ArtifactGeneratorReconciler{
		Client:               m.GetClient(),
		Events:               m.events(SourceController),
		Storage:              m.Storage,
		Remote:               m.remoteArtifacts(),
		JitterPercent:        opts.IntervalJitterPercentage,
		DependencyRequeue:    opts.RequeueDependency,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
	}
	return ag.SetupWithManager(ctx, m, opts.controllerOptions())
}

func (m *Manager) setupKustomize(ctx context.Context, opts Options) error {
	r := &kustomizectrl.KustomizationReconciler{
		Client:               m.GetClient(),
		Events:               m.events(KustomizeController),
		Fetcher:              m.artifacts(),
		Applier:              m.targets(opts),
		JitterPercent:        opts.IntervalJitterPercentage,
		DependencyRequeue:    opts.RequeueDependency,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
		NoRemoteBases:        opts.Kustomize.NoRemoteBases,
		Builder:              build.NewBuilder(opts.Kustomize.Build, m.children),
		StoredAgainHere:      m.storedAgainHere,
	}
	if m.Storage != nil {
		r.Changes = m.Storage
	}
	owned, err := m.versionsSelected(ssa.Owner{}.NameLabel(), kustomizectrl.WatchOptions()...)
	if err != nil {
		return err
	}
	r.Versions = owned
	r.Health = owned
	r.Wakes = health.NewWakes(owned)
	if m.ui != nil {
		m.ui.Previews[kustomizev1.KustomizationKind] = r.Preview
	}
	return r.SetupWithManager(ctx, m, m.consumerOptions(opts))
}

// consumerOptions returns the options of the controller of a kind that
// consumes sources' artifacts: those of every controller, and the events
// of the artifacts this process's source controller builds again.
func (m *Manager) consumerOptions(opts Options) reconcile.ControllerOptions {
	copts := opts.controllerOptions()
	if m.Storage != nil {
		copts.ArtifactsStoredAgain = m.storedAgain.subscribe
	}
	return copts
}

// versionsSelected returns a versions cache, run by the manager, of the
// objects that the label selector selects, made with opts.
func (m *Manager) versionsSelected(selector string, opts ...versions.Option) (*versions.Cache, error) {
	selected, err := versions.New(m.GetConfig(), m.GetRESTMapper(), selector, opts...)
	if err != nil {
		return nil, err
	}
	return selected, m.Add(selected)
}

// targets returns the factory of the clients that apply as a tenant, on
// the local cluster or a remote one.
func (m *Manager) targets(opts Options) *impersonation.Factory {
	return &impersonation.Factory{
		Config:                m.GetConfig(),
		HTTPClient:            m.GetHTTPClient(),
		Scheme:                m.GetScheme(),
		Mapper:                m.GetRESTMapper(),
		DefaultServiceAccount: opts.Kustomize.DefaultServiceAccount,
		KubeConfigPolicy: kubeconfig.Policy{
			AllowExec: opts.Kustomize.InsecureKubeconfigExec, AllowInsecureTLS: opts.Kustomize.InsecureKubeconfigTLS,
		},
	}
}

func (m *Manager) setupHelm(ctx context.Context, opts Options) error {
	reader := m.artifacts()
	renderer := sandbox.New(opts.Helm.Render, m.children)
	r := &helmctrl.HelmReleaseReconciler{
		Client:               m.GetClient(),
		Events:               m.events(HelmController),
		ChartReader:          reader,
		Targets:              m.targets(opts),
		JitterPercent:        opts.IntervalJitterPercentage,
		DependencyRequeue:    opts.RequeueDependency,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
		MaxChartSize:         opts.Helm.MaxChartSize,
		ChartCacheMaxMemory:  opts.Helm.ChartCacheMaxMemory,
		Sandbox:              renderer,
		StoredAgainHere:      m.storedAgainHere,
	}
	// Drift detection judges the objects of a release by the helm
	// controller's own fields in them (see versions.WithFieldsOf); the
	// waits of its actions take the health of what was not ready from the
	// watch (see versions.WithHealth).
	owned, err := m.versionsSelected(ssa.Owner{Group: helmv2.GroupVersion.Group}.NameLabel(), versions.WithFieldsOf(helmaction.FieldManager),
		versions.WithHealth(health.Judge, health.Watchable, nil))
	if err != nil {
		return err
	}
	r.Versions = owned
	r.Health = owned
	r.Wakes = health.NewWakes(owned)
	releaseSecrets, err := m.versionsSelected(helmaction.ReleaseSecretsSelector)
	if err != nil {
		return err
	}
	r.Releases = helmaction.NewNewestCache(releaseSecrets, 0)
	if m.ui != nil {
		m.ui.Previews[helmv2.HelmReleaseKind] = r.Preview
	}
	copts := m.consumerOptions(opts)
	copts.MaxConcurrentReconciles = max(opts.Helm.Concurrent, 1)
	return r.SetupWithManager(ctx, m, copts)
}

func (m *Manager) setupGating(ctx context.Context, opts Options) error {
	r := &gatingctrl.GateReconciler{
		Client:        m.GetClient(),
		Events:        m.events(GatingController),
		JitterPercent: opts.IntervalJitterPercentage,
	}
	return r.SetupWithManager(ctx, m, opts.controllerOptions())
}
