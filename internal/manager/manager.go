package manager

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/isolate"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reselect"
	"github.com/windlass-dev/windlass/internal/restmap"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/shard"
	"github.com/windlass-dev/windlass/internal/ui"
)

// Manager is a controller manager with the selected controllers set up.
type Manager struct {
	ctrl.Manager
	// Storage is the artifact storage, when a source controller runs.
	Storage *artifact.Storage
	// storedAgain passes the artifacts built again in Storage to the
	// controllers of their consumers.
	storedAgain storedAgainEvents
	// StorageAddr is where Storage is served.
	StorageAddr string
	// HelmIndexes are the parsed Helm repository indexes that the
	// HelmRepository and HelmChart reconcilers share, when the source
	// controller runs.
	HelmIndexes *repository.IndexCache

	// dispatcher takes the events of this process's controllers when the
	// notification controller runs here.
	dispatcher *dispatch.Dispatcher
	// eventsAddr is where events are posted otherwise (Options.EventsAddr).
	eventsAddr string
	// children bounds the memory of the child processes that render
	// charts and run large kustomize builds, together.
	children *isolate.Pool
	// recent keeps the latest events for the web UI, when it is served.
	recent *ui.Recent
	// ui is the web UI's server, when it is served: the controllers set
	// up after it hand it what only they can do (previews).
	ui *ui.Server
	// Shard is this replica's membership of the ring of replicas that
	// share the objects (--shards=auto); nil otherwise.
	Shard *shard.Member
}

// New builds a manager for the cluster behind cfg.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Manager, error) {
	controllers, err := opts.Validate()
	if err != nil {
		return nil, err
	}
	var member string
	if opts.Shards.auto() {
		if member, err = opts.Shards.memberName(); err != nil {
			return nil, err
		}
	}
	cacheOpts, held, err := opts.cacheOptions()
	if err != nil {
		return nil, err
	}
	var newClient client.NewClientFunc
	if opts.Shards.auto() {
		newClient = newShardClient
	}
	mgr, err := ctrl.NewManager(withQuietWarnings(cfg), ctrl.Options{
		Scheme:         scheme.New(),
		MapperProvider: restmap.NewDynamic,
		Cache:          cacheOpts,
		NewClient:      newClient,
		Client:         client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}},
		// The metrics port is served by metricsServer.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        opts.HealthAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.EnableLeaderElection,
		LeaderElectionID:              opts.leaderElectionID(controllers),
		LeaderElectionNamespace:       opts.leaderElectionNamespace(),
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.LeaseDuration,
		RenewDeadline:                 &opts.RenewDeadline,
		RetryPeriod:                   &opts.RetryPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if srv := opts.metricsServer(); srv != nil {
		if err := mgr.Add(srv); err != nil {
			return nil, err
		}
	}
	m := &Manager{Manager: mgr, eventsAddr: opts.EventsAddr, children: isolate.NewPool(opts.childProcessesMaxMemory())}
	if err := m.startEvents(controllers, opts); err != nil {
		return nil, err
	}
	if err := m.startUI(ctx, opts); err != nil {
		return nil, err
	}
	selector, _ := opts.watchSelector()
	if err := m.startShard(cfg, controllers, &opts, member, selector, held); err != nil {
		return nil, err
	}
	var served []kinds.Kind
	for _, name := range controllers {
		if err := m.setup(ctx, name, opts); err != nil {
			return nil, fmt.Errorf("setting up the %s controller: %w", name, err)
		}
		served = append(served, kinds.OfController(name)...)
	}
	metricsOf := &resourceMetrics{cache: mgr.GetCache(), kinds: served}
	if m.Shard != nil {
		metricsOf.reports = m.Shard.Reports
	}
	if err := mgr.Add(metricsOf); err != nil {
		return nil, err
	}
	if err := mgr.Add(&pageOut{cache: mgr.GetCache()}); err != nil {
		return nil, err
	}
	return m, nil
}

// resourceMetrics reports the series of every object of the kinds this
// process serves, read from the shared cache at each scrape, while it
// leads: a standby replica reports nothing twice.
type resourceMetrics struct {
	cache client.Reader
	kinds []kinds.Kind
	// reports, when set, passes the objects this replica reports: those it
	// holds, when the replicas share the objects.
	reports func(kind string, obj client.Object) bool
}

// NeedLeaderElection is true: the leader reports.
func (r *resourceMetrics) NeedLeaderElection() bool { return true }

// Start reports until ctx is done.
func (r *resourceMetrics) Start(ctx context.Context) error {
	metrics.Resources.Serve(ctx, r.cache, r.kinds, r.reports)
	return nil
}

// leaderElectionID names the lease of a process running controllers: one
// name for all of them (so that a new controller in a later build does not
// rename the lease of a running installation), else one per subset, so
// that split deployments elect their leaders apart.
func (o Options) leaderElectionID(controllers []string) string {
	if len(o.Controllers) == 0 {
		return "windlass-leader-election"
	}
	return "windlass-" + strings.Join(controllers, "-") + "-leader-election"
}

// cacheOptions restricts the shared cache to the watched namespace, and
// each kind's objects to those its cacheSelector selects. With
// --shards=auto, the objects of the kinds cached by holder are those of
// the buckets this replica holds: held, which the replica's shard member
// keeps up to date, selects them (nil otherwise). Cached objects are kept
// without their managed fields, which no reconciler reads: memory then
// grows with the objects' specs and statuses only.
func (o Options) cacheOptions() (opts cache.Options, held *reselect.Selection, err error) {
	opts = cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if !o.WatchAllNamespaces {
		opts.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	selector, err := o.watchSelector()
	if err != nil {
		return opts, nil, err
	}
	if held, err = o.heldSelection(selector); err != nil {
		return opts, nil, err
	}
	if held != nil {
		var byBucket []runtime.Object
		for _, obj := range cachedByHolder() {
			byBucket = append(byBucket, obj)
		}
		opts.NewInformer = reselect.NewInformer(held.For(byBucket...))
	}
	for _, k := range kinds.All {
		if s := o.cacheSelector(k, selector); s != nil {
			if opts.ByObject == nil {
				opts.ByObject = map[client.Object]cache.ByObject{}
			}
			opts.ByObject[k.New()] = cache.ByObject{Label: s}
		}
	}
	return opts, held, nil
}

// watchSelector returns the --watch-label-selector, nil when none.
func (o Options) watchSelector() (labels.Selector, error) {
	if o.WatchLabelSelector == "" {
		return nil, nil
	}
	selector, err := labels.Parse(o.WatchLabelSelector)
	if err != nil {
		return nil, fmt.Errorf("invalid --watch-label-selector: %w", err)
	}
	return selector, nil
}

func (o Options) rateLimiter() workqueue.TypedRateLimiter[ctrlreconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](o.MinRetryDelay, o.MaxRetryDelay)
}

// controllerOptions are the options of each kind's controller.
func (o Options) controllerOptions() reconcile.ControllerOptions {
	return reconcile.ControllerOptions{MaxConcurrentReconciles: o.Concurrent, RateLimiter: o.rateLimiter(), Sharder: o.sharder}
}

// setup sets up the controller called name.
func (m *Manager) setup(ctx context.Context, name string, opts Options) error {
	for _, c := range controllers {
		if c.name == name {
			return c.setup(m, ctx, opts)
		}
	}
	return fmt.Errorf("unknown controller %q", name)
}

// setupStorage opens the artifact storage and serves it over HTTP.
func (m *Manager) setupStorage(opts Options) error {
	if m.Storage != nil {
		return nil
	}
	path, err := opts.Source.storagePath()
	if err != nil {
		return err
	}
	adv, err := opts.Source.storageAdvAddr()
	if err != nil {
		return err
	}
	storage, err := artifact.New(path, adv, opts.Source.ArtifactRetentionTTL, opts.Source.ArtifactRetentionRecords)
	if err != nil {
		return fmt.Errorf("opening the artifact storage at %s: %w", path, err)
	}
	storage.SetShared(sharedArtifacts(opts))
	storage.OnStoredAgain(m.storedAgain.tell)
	m.Storage = storage
	m.StorageAddr = opts.Source.StorageAddr
	return m.Add(&storageServer{storage: storage, addr: opts.Source.StorageAddr, handler: m.forwardArtifacts(storage.Handler())})
}

// storageServer serves the artifact storage over HTTP while the manager
// runs.
type storageServer struct {
	storage *artifact.Storage
	addr    string
	handler http.Handler
}

// NeedLeaderElection is false: every replica serves its storage, so that a
// follower never breaks the URLs it advertised before.
func (s *storageServer) NeedLeaderElection() bool { return false }

// Start serves until ctx is done, then shuts down gracefully.
func (s *storageServer) Start(ctx context.Context) error {
	ctrl.LoggerFrom(ctx).Info("Serving artifacts", "addr", s.addr)
	return s.storage.StartWith(ctx, s.addr, s.handler)
}
