// Package manager builds the controller manager that `windlass controller`
// runs: one process, one shared informer cache, and any subset of the
// Windlass controllers, with the artifact storage shared between them.
package manager

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/internal/isolate"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/ui"
)

// Options configure the manager; each has a command-line flag of the same
// name in kebab case.
type Options struct {
	// Controllers are the controllers to run; empty means all.
	Controllers []string

	MetricsAddr string
	HealthAddr  string
	// PprofAddr serves Go's pprof profiles when not empty.
	PprofAddr string
	// EnablePprof serves Go's pprof profiles on the metrics port too,
	// under /debug/pprof/ (windlass debug profile fetches them there).
	EnablePprof bool

	EnableLeaderElection    bool
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration

	// Concurrent is how many objects of each kind are reconciled at once.
	Concurrent int
	// RequeueDependency is how long to wait for a dependency that is not
	// ready.
	RequeueDependency time.Duration
	// IntervalJitterPercentage spreads object intervals.
	IntervalJitterPercentage int
	MinRetryDelay            time.Duration
	MaxRetryDelay            time.Duration

	// WatchAllNamespaces watches every namespace; otherwise only Namespace.
	WatchAllNamespaces bool
	// Namespace is the namespace the controller runs in.
	Namespace string
	// WatchLabelSelector restricts the watched Windlass objects (sharding).
	WatchLabelSelector string
	// Shards share the objects among the replicas.
	Shards ShardOptions
	// sharder is this replica's membership when the replicas share the
	// objects: set by New for the controllers.
	sharder reconcile.Sharder
	// NoCrossNamespaceRefs refuses references to objects in other
	// namespaces.
	NoCrossNamespaceRefs bool
	// InsecureAllowHTTP allows plain-HTTP source URLs (true by default, as
	// in the reference); when false they stall, and the controller refuses
	// to start with a plain-HTTP proxy in its environment.
	InsecureAllowHTTP bool
	// AllowLoopback lets what tenants declare or push reach the
	// controller's own host: Provider addresses, and the repositories of
	// chart dependencies that no HelmRepository declares (for `windlass
	// dev` and tests, whose servers listen on loopback).
	AllowLoopback bool

	// Source holds the options of the source controller.
	Source SourceOptions
	// UIAddr, when set, is where the web UI is served (loopback only).
	UIAddr string
	// UIActions lets the UI act (reconcile, suspend, resume) with the
	// manager's own client: only for windlass dev, whose one user is the
	// administrator of its cluster. No flag sets it.
	UIActions bool
	// UILogs, when set, keeps the controllers' lines about objects for the
	// UI's pages (see WithUILogs).
	UILogs *ui.Logs
	// UISignIn signs the UI's users in, so that it may serve them beyond
	// loopback, each what the API server lets them see and do.
	UISignIn UISignInOptions

	// ChildProcessesMaxMemory bounds the memory of the child processes
	// that render charts and run large kustomize builds, together.
	ChildProcessesMaxMemory int64

	// Kustomize holds the options of the kustomize controller.
	Kustomize KustomizeOptions
	// Helm holds the options of the helm controller.
	Helm HelmOptions
	// Notification holds the options of the notification controller.
	Notification NotificationOptions
	// Image holds the options of the image controllers.
	Image ImageOptions
	// EventsAddr is the notification controller's event endpoint, where
	// the controllers of this process post their events when it runs in
	// another process; empty posts none (or hands them over in process,
	// when it runs here).
	EventsAddr string
}

// DefaultOptions returns the defaults of the reference implementation where
// it has one.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:   ":8080",
		HealthAddr:    ":9440",
		LeaseDuration: 35 * time.Second,
		RenewDeadline: 30 * time.Second,
		RetryPeriod:   5 * time.Second,
		// The reference implementation runs 4; a reconciler mostly waits
		// for the API server, and 8 apply a monorepo of 1000 applications
		// in 50 s rather than 64 s on 2 cores (see test/bench).
		Concurrent:               8,
		RequeueDependency:        30 * time.Second,
		IntervalJitterPercentage: 5,
		MinRetryDelay:            750 * time.Millisecond,
		MaxRetryDelay:            15 * time.Minute,
		WatchAllNamespaces:       true,
		Shards:                   defaultShardOptions(),
		InsecureAllowHTTP:        true,
		Namespace:                runtimeNamespace(),
		ChildProcessesMaxMemory:  isolate.DefaultPoolMemory,
		Source: SourceOptions{
			StorageAddr:              ":9090",
			ArtifactRetentionTTL:     time.Minute,
			ArtifactRetentionRecords: 2,
		},
	}
}

func runtimeNamespace() string {
	if ns := os.Getenv("RUNTIME_NAMESPACE"); ns != "" {
		return ns
	}
	return "flux-system"
}

// Validate checks the options, and returns the controllers to run.
func (o Options) Validate() ([]string, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := o.checkProxyEnvironment(os.LookupEnv); err != nil {
		return nil, err
	}
	return o.selectedControllers()
}

// selectedControllers validates and returns the controllers to run. Names
// may carry the reference implementation's "-controller" suffix.
func (o Options) selectedControllers() ([]string, error) {
	if len(o.Controllers) == 0 {
		return AllControllers, nil
	}
	wanted := map[string]bool{}
	for _, name := range o.Controllers {
		name = strings.TrimSuffix(strings.TrimSpace(name), "-controller")
		if !slices.Contains(AllControllers, name) {
			return nil, fmt.Errorf("unknown controller %q: choose from %s", name, strings.Join(AllControllers, ", "))
		}
		wanted[name] = true
	}
	var out []string
	for _, name := range AllControllers {
		if wanted[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

func (o Options) validate() error {
	if err := o.UISignIn.validate(o.UIAddr); err != nil {
		return err
	}
	if err := o.Shards.validate(o); err != nil {
		return err
	}
	switch {
	case o.Concurrent < 1:
		return fmt.Errorf("--concurrent must be at least 1")
	case o.MinRetryDelay <= 0 || o.MaxRetryDelay < o.MinRetryDelay:
		return fmt.Errorf("--min-retry-delay must be positive and at most --max-retry-delay")
	case o.Source.GitCloneMaxSize < 0:
		return fmt.Errorf("--git-clone-max-size must not be negative")
	case o.Source.GitClonesMaxMemory < 0:
		return fmt.Errorf("--git-clones-max-memory must not be negative")
	case o.Source.FetchMaxSize < 0:
		return fmt.Errorf("--fetch-max-size must not be negative")
	case o.Source.HelmIndexCacheMaxMemory < 0:
		return fmt.Errorf("--helm-index-cache-max-memory must not be negative")
	case o.Source.HelmIndexParseMaxMemory < 0:
		return fmt.Errorf("--helm-index-parse-max-memory must not be negative")
	case o.Helm.Render.Memory > o.childProcessesMaxMemory():
		return fmt.Errorf("--helm-render-max-memory must be at most --child-processes-max-memory")
	case o.Kustomize.Build.Memory > o.childProcessesMaxMemory():
		return fmt.Errorf("--kustomize-build-max-memory must be at most --child-processes-max-memory")
	case o.Helm.ChartCacheMaxMemory < 0:
		return fmt.Errorf("--helm-chart-cache-max-memory must not be negative")
	case o.Source.ArtifactRetentionRecords < 1:
		return fmt.Errorf("--artifact-retention-records must be at least 1")
	case o.IntervalJitterPercentage < 0 || o.IntervalJitterPercentage >= 100:
		return fmt.Errorf("--interval-jitter-percentage must be in [0, 100)")
	}
	return nil
}

// storagePath returns --storage-path, or its default: /data in a cluster,
// a folder in the user's cache elsewhere.
func (o SourceOptions) storagePath() (string, error) {
	if o.StoragePath != "" {
		return o.StoragePath, nil
	}
	if inCluster() {
		return "/data", nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no --storage-path given and no cache folder: %w", err)
	}
	return filepath.Join(cache, "windlass", "storage"), nil
}

// storageAdvAddr returns --storage-adv-addr, or its default: the storage
// address with the host filled in (the pod's host name in a cluster,
// localhost elsewhere).
func (o SourceOptions) storageAdvAddr() (string, error) {
	if o.StorageAdvAddr != "" {
		return o.StorageAdvAddr, nil
	}
	host, port, err := net.SplitHostPort(o.StorageAddr)
	if err != nil {
		return "", fmt.Errorf("invalid --storage-addr %q: %w", o.StorageAddr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
		if inCluster() {
			if host, err = os.Hostname(); err != nil {
				return "", err
			}
		}
	}
	return net.JoinHostPort(host, port), nil
}

func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != ""
}

// leaderElectionNamespace returns --leader-election-namespace, or the
// runtime namespace.
func (o Options) leaderElectionNamespace() string {
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace
	}
	return o.Namespace
}

// proxyVariables are the environment variables Go's HTTP clients take a
// proxy from.
var proxyVariables = []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}

// checkProxyEnvironment refuses a plain-HTTP proxy in the environment
// (read with lookup) when plain HTTP is not allowed: every request would
// cross it unencrypted. The error names the variable, never its value,
// which may hold credentials.
func (o Options) checkProxyEnvironment(lookup func(string) (string, bool)) error {
	if o.InsecureAllowHTTP {
		return nil
	}
	for _, name := range proxyVariables {
		value, ok := lookup(name)
		if !ok || value == "" {
			continue
		}
		if !strings.Contains(value, "://") || strings.HasPrefix(strings.ToLower(value), "http://") {
			return fmt.Errorf("%s names a plain-HTTP proxy, which --insecure-allow-http=false forbids", name)
		}
	}
	return nil
}

// childProcessesMaxMemory returns --child-processes-max-memory, or its
// default when not set.
func (o Options) childProcessesMaxMemory() int64 {
	if o.ChildProcessesMaxMemory <= 0 {
		return isolate.DefaultPoolMemory
	}
	return o.ChildProcessesMaxMemory
}
