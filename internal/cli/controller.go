package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// controllerFlags are the flags of `windlass controller`.
type controllerFlags struct {
	opts        manager.Options
	kubeconfig  string
	qps         float32
	burst       int
	logLevel    string
	logEncoding string
}

func newControllerCommand() *cobra.Command {
	f := &controllerFlags{opts: manager.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Windlass controllers against a cluster",
		Long: `Run the Windlass controllers in one process, sharing one object cache and one
artifact storage. --controllers selects a subset, so that the same binary can
also run split, one controller per deployment.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	fs := cmd.Flags()
	o := &f.opts
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig; defaults to $KUBECONFIG, then the in-cluster config, then ~/.kube/config")
	fs.Float32Var(&f.qps, "kube-api-qps", 500, "requests per second to the Kubernetes API, sustained")
	fs.IntVar(&f.burst, "kube-api-burst", 1000, "requests to the Kubernetes API in a burst")
	fs.StringSliceVar(&o.Controllers, "controllers", nil, "controllers to run, comma-separated (default all: "+strings.Join(manager.AllControllers, ",")+")")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "address the Prometheus metrics are served on; 0 turns them off")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "address the health probes are served on")
	fs.StringVar(&o.PprofAddr, "pprof-addr", "", "address Go's pprof profiles are served on (/debug/pprof/); empty turns them off")
	fs.BoolVar(&o.EnablePprof, "enable-pprof", false, "serve Go's pprof profiles on the metrics port too (/debug/pprof/), for windlass debug profile")
	fs.BoolVar(&o.EnableLeaderElection, "enable-leader-election", false, "elect a leader, so that only one replica reconciles")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election lease (default: the runtime namespace)")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "how long a lease lasts")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "how long the leader tries to renew before giving up, and exiting")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "how often candidates retry")
	fs.IntVar(&o.Concurrent, "concurrent", o.Concurrent, "objects of each kind reconciled at once")
	fs.DurationVar(&o.RequeueDependency, "requeue-dependency", o.RequeueDependency, "how long to wait for a dependency that is not ready")
	fs.IntVar(&o.IntervalJitterPercentage, "interval-jitter-percentage", o.IntervalJitterPercentage, "spread of object intervals, in per cent")
	fs.DurationVar(&o.MinRetryDelay, "min-retry-delay", o.MinRetryDelay, "first delay before retrying a failed reconciliation")
	fs.DurationVar(&o.MaxRetryDelay, "max-retry-delay", o.MaxRetryDelay, "longest delay between retries of a failed reconciliation")
	fs.BoolVar(&o.WatchAllNamespaces, "watch-all-namespaces", o.WatchAllNamespaces, "watch every namespace; when false, only the runtime namespace ($RUNTIME_NAMESPACE)")
	fs.StringVar(&o.WatchLabelSelector, "watch-label-selector", "", "reconcile only the objects that match this label selector (sharding)")
	manager.BindShardFlags(fs, &o.Shards)
	fs.StringVar(&o.EventsAddr, "events-addr", "", "the notification controller's event endpoint, when it runs in another process: events are posted there")
	fs.BoolVar(&o.NoCrossNamespaceRefs, "no-cross-namespace-refs", false, "refuse references to objects in other namespaces")
	fs.BoolVar(&o.InsecureAllowHTTP, "insecure-allow-http", o.InsecureAllowHTTP, "allow plain-HTTP source URLs; when false they stall, and a plain-HTTP proxy in the environment stops the controller from starting")
	fs.StringVar(&o.UIAddr, "ui-addr", "", "address the web UI is served on (127.0.0.1:9880, say): on loopback only and read-only without --ui-signin; empty turns it off")
	bindUISignInFlags(fs, &o.UISignIn)
	fs.Int64Var(&o.ChildProcessesMaxMemory, "child-processes-max-memory", o.ChildProcessesMaxMemory,
		"bytes of memory the processes that render charts and run large kustomize builds use together; the Go memory limit leaves them this much of the container's")
	fs.BoolVar(&o.AllowLoopback, "allow-loopback-addresses", false, "let Provider addresses, and chart dependencies from repositories no HelmRepository declares, reach the controller's own host (127.0.0.0/8, ::1)")
	manager.BindControllerFlags(fs, o)
	fs.StringVar(&f.logLevel, "log-level", "info", "log verbosity: error, info, debug or trace")
	fs.StringVar(&f.logEncoding, "log-encoding", "json", "log format: json or console")
	return cmd
}

func (f *controllerFlags) run(cmd *cobra.Command) error {
	logger, err := newLogger(cmd, f.logLevel, f.logEncoding)
	if err != nil {
		return err
	}
	controllers, err := f.opts.Validate()
	if err != nil {
		return err
	}
	logger = manager.WithUILogs(logger, &f.opts)
	ctrl.SetLogger(logger)
	applyMemoryLimit(logger, controllers, f.opts.ChildProcessesMaxMemory)
	applyGCPercent(logger)
	metrics.SetBuildInfo(Version)
	// The work folders that killed processes left in $TMPDIR go first; the
	// sweep logs what it removed, or why it could not (which stops nothing).
	_, _ = workdir.Sweep(logger)
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	ctx := ctrl.SetupSignalHandler()
	mgr, err := manager.New(ctx, cfg, f.opts)
	if err != nil {
		return err
	}
	logger.Info("Starting the manager", "controllers", controllers)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	// Stopped: no reconcile runs, the other replicas may take the objects.
	leaving, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return mgr.Leave(leaving)
}

// restConfig loads the kubeconfig at path, or the default one.
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to connect to: %w", err)
	}
	return cfg, nil
}

// newLogger builds the structured logger of the controllers.
func newLogger(cmd *cobra.Command, level, encoding string) (logr.Logger, error) {
	levels := map[string]zapcore.Level{"error": zapcore.ErrorLevel, "info": zapcore.InfoLevel, "debug": zapcore.DebugLevel, "trace": zapcore.Level(-2)}
	lvl, ok := levels[level]
	if !ok {
		return logr.Logger{}, fmt.Errorf("invalid --log-level %q: choose error, info, debug or trace", level)
	}
	opts := []zap.Opts{zap.Level(lvl), zap.WriteTo(cmd.ErrOrStderr())}
	switch encoding {
	case "json":
		opts = append(opts, zap.JSONEncoder())
	case "console":
		opts = append(opts, zap.ConsoleEncoder())
	default:
		return logr.Logger{}, fmt.Errorf("invalid --log-encoding %q: choose json or console", encoding)
	}
	return zap.New(opts...), nil
}

// bindUISignInFlags binds the flags of the UI's sign-in.
func bindUISignInFlags(fs *pflag.FlagSet, o *manager.UISignInOptions) {
	fs.StringSliceVar(&o.Methods, "ui-signin", nil, "how users sign in to the web UI: token (a Kubernetes token), oidc (an OpenID provider), or both; "+
		"each then sees and does what the API server lets them (the controller needs RBAC to impersonate and to create TokenReviews and SubjectAccessReviews)")
	fs.StringVar(&o.OIDCIssuerURL, "ui-oidc-issuer-url", "", "the OpenID provider's issuer URL")
	fs.StringVar(&o.OIDCClientID, "ui-oidc-client-id", "", "the UI's client ID at the OpenID provider")
	fs.StringVar(&o.OIDCClientSecretFile, "ui-oidc-client-secret-file", "", "file that holds the UI's client secret at the OpenID provider")
	fs.StringVar(&o.OIDCRedirectURL, "ui-oidc-redirect-url", "", "the UI's /auth/callback URL as browsers reach it (https://windlass.example.com/auth/callback)")
	fs.StringVar(&o.OIDCUsernameClaim, "ui-oidc-username-claim", "email", "the claim that holds the username, as the API server's --oidc-username-claim")
	fs.StringVar(&o.OIDCUsernamePrefix, "ui-oidc-username-prefix", "", "prefix of the usernames, as the API server's --oidc-username-prefix: - for none; by default the issuer and # unless the claim is email")
	fs.StringVar(&o.OIDCGroupsClaim, "ui-oidc-groups-claim", "groups", "the claim that holds the groups, as the API server's --oidc-groups-claim")
	fs.StringVar(&o.OIDCGroupsPrefix, "ui-oidc-groups-prefix", "", "prefix of the groups, as the API server's --oidc-groups-prefix")
	fs.StringVar(&o.SessionKeyFile, "ui-session-key-file", "", "file of at least 32 bytes that signs the sessions' cookies (default a random key: sessions end when the controller restarts)")
	fs.DurationVar(&o.SessionTTL, "ui-session-ttl", 8*time.Hour, "how long a sign-in lasts")
	fs.BoolVar(&o.ReadOnly, "ui-read-only", false, "offer signed-in users no actions (reconcile, suspend, resume, gate open and close)")
}
