package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// The kinds of the applications' objects a run can measure (-kind).
const (
	// KindKustomization applies every application with a Kustomization
	// from a source of its own or a shared one (the default).
	KindKustomization = "kustomization"
	// KindHelmRelease installs every application with a HelmRelease of
	// the one chart of one HelmRepository (SourceHelm).
	KindHelmRelease = "helmrelease"
)

// Where the HelmReleases of a -kind helmrelease run live (-namespaces).
const (
	// NamespacesPerApp puts every HelmRelease, and so its release and
	// objects, in a namespace of its own (the default).
	NamespacesPerApp = "per-app"
	// NamespacesOne puts them all in the run's namespace, with the
	// HelmRepository.
	NamespacesOne = "one"
)

// Config describes one benchmark run.
type Config struct {
	// N is the number of applications.
	N int
	// Kind is the kind of the applications' objects: KindKustomization
	// (the default) or KindHelmRelease.
	Kind string
	// Source is the kind of source the applications are served from:
	// SourceGit (the default), SourceOCI or SourceBucket for
	// Kustomizations; SourceHelm (the default and only one) for
	// HelmReleases.
	Source string
	// Layout is LayoutRepoPerApp or LayoutMonorepo; the OCI and bucket
	// sources have a source per application (LayoutRepoPerApp) only, and
	// the HelmReleases share one HelmRepository (LayoutMonorepo, the
	// default and only one with SourceHelm).
	Layout string
	// Namespaces is NamespacesPerApp (the default) or NamespacesOne: where
	// the HelmReleases of KindHelmRelease live. Kustomizations are all in
	// the run's namespace.
	Namespaces string
	// Concurrent is passed to `windlass controller --concurrent`.
	Concurrent int
	// PprofAddr, when set, is passed to `windlass controller --pprof-addr`,
	// so that the run can be profiled from outside.
	PprofAddr string
	// ProfileDir, when set, receives CPU profiles of the controller and of
	// kube-apiserver, taken over the first ProfileSeconds of the ready
	// phase (windlass.pprof, kube-apiserver.pprof).
	ProfileDir     string
	ProfileSeconds int
	// Cleanup deletes the run's Kustomizations, sources and namespace at
	// the end, while the controller still runs, so that a later run on
	// the same Cluster does not see them.
	Cleanup bool
	// ReadyTimeout bounds the wait for every Kustomization to be Ready;
	// the later waits are bounded by it too.
	ReadyTimeout time.Duration
	// GitServer is GitServerNative (the default) or GitServerHTTPBackend:
	// which loopback git server serves the repositories of SourceGit.
	GitServer string
	// KubeconfigViaEnv passes the kubeconfig in $KUBECONFIG instead of
	// --kubeconfig. It is a diagnostic: `windlass controller --kubeconfig`
	// loads the file with clientcmd and keeps client-go's default client
	// rate limit (5 requests per second, bursts of 10, per resource type),
	// while without the flag controller-runtime's loader turns the
	// client-side limit off.
	KubeconfigViaEnv bool
	// Gate puts every Kustomization behind one closed Gate: the ready
	// phase then measures the applications held, the controller's API
	// requests while they are, and the time from the gate's opening until
	// every one is Ready (see gatedRun).
	Gate bool
	// Generator adds, after the monorepo layout's phases, the same
	// repository split by one ArtifactGenerator (see GeneratorResult).
	Generator bool
	// GateQuiet is the window over which the held phase's API requests
	// are counted; 10s when zero.
	GateQuiet time.Duration
	// Alert creates, before the applications, a generic Provider that
	// posts to a loopback sink and an Alert (severity info) that selects
	// every object of the run; the figures then count the messages the
	// sink received, and a failure phase follows the usual ones (see
	// AlertResult and failurePhase).
	Alert bool
	// AlertWindow is passed to the controller as --rate-limit-interval,
	// the dispatcher's window; its default (5m) when zero.
	AlertWindow time.Duration
	// Image turns the N applications into N image pipelines (see
	// ImageResult): an ImageRepository of ImageTags tags each in an
	// in-process registry, an ImagePolicy and an ImageUpdateAutomation
	// each, pushing to one git repository.
	Image bool
	// ImageTags is the number of tags of every registry repository; 1000
	// when zero.
	ImageTags int
	// ImageInterval is the interval of the ImageRepositories (1m when
	// zero), and the no-op window is 1.2 of it; ImageAutomationInterval
	// is the automations' (ImageInterval when zero).
	ImageInterval, ImageAutomationInterval time.Duration
	// UI serves the controller's web UI on a loopback port (--ui-addr)
	// and, once every application is Ready, measures it: the overview
	// and the graph, a change reaching an open page, and what open pages
	// cost (see UIResult).
	UI bool
	// UIQuiet is the length of each of the -ui run's two quiet windows,
	// with no page open and with the pages open; 5s when zero.
	UIQuiet time.Duration
	// Controllers is what the run measures: ControllersWindlass (the
	// default), or ControllersReference, the reference toolkit's
	// source-controller and kustomize-controller (see reference.go).
	Controllers string
	// Replicas is the number of `windlass controller` processes; above
	// one they share the objects (--shards=auto, see replicas.go), and a
	// failover phase and a rejoin phase end the run. 0 means 1.
	Replicas int
	// ShardBy is the replicas' --shard-by (object when empty), and
	// ShardLeaseDuration their --shard-lease-duration (15s when zero).
	ShardBy            string
	ShardLeaseDuration time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// withDefaults checks cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.N < 1 {
		return cfg, errors.New("n must be at least 1")
	}
	var err error
	if cfg, err = cfg.withControllers(); err != nil {
		return cfg, err
	}
	if cfg, err = cfg.withReplicas(); err != nil {
		return cfg, err
	}
	if cfg.Image {
		if cfg, err = cfg.withImageDefaults(); err != nil {
			return cfg, err
		}
	}
	if cfg, err = cfg.withKind(); err != nil {
		return cfg, err
	}
	if err := cfg.checkUI(); err != nil {
		return cfg, err
	}
	if err := cfg.checkGenerator(); err != nil {
		return cfg, err
	}
	if cfg.GitServer == "" {
		cfg.GitServer = GitServerNative
	}
	if cfg.GitServer != GitServerNative && cfg.GitServer != GitServerHTTPBackend {
		return cfg, fmt.Errorf("unknown git server %q: choose %s or %s", cfg.GitServer, GitServerNative, GitServerHTTPBackend)
	}
	// The reference controllers keep their own default unless told; the
	// floor applies as many applications at once as windlass does.
	if cfg.Concurrent < 1 && cfg.Controllers != ControllersReference {
		cfg.Concurrent = manager.DefaultOptions().Concurrent
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.AlertWindow != 0 && !cfg.Alert {
		return cfg, errors.New("-alert-window needs -alert")
	}
	if cfg.AlertWindow < 0 {
		return cfg, errors.New("-alert-window must not be negative")
	}
	if cfg.AlertWindow == 0 {
		cfg.AlertWindow = defaultAlertWindow
	}
	return cfg, nil
}

// checkUI refuses -ui where it does not measure: it suspends a
// Kustomization, and its change must not count among the figures of
// -alert or -image.
func (cfg Config) checkUI() error {
	if !cfg.UI {
		return nil
	}
	switch {
	case cfg.Kind != KindKustomization:
		return fmt.Errorf("-ui measures the pages of Kustomizations: not with -kind %s", cfg.Kind)
	case cfg.Image:
		return errors.New("-ui does not run with -image")
	case cfg.Alert:
		return errors.New("-ui does not run with -alert: its change would count among the alerts' messages")
	case cfg.UIQuiet < 0:
		return errors.New("-ui-quiet must not be negative")
	}
	return nil
}

// withKind checks the kind, source and layout of cfg and fills in their
// defaults: a Kustomization per application from git, in the
// repo-per-app layout; or a HelmRelease per application from one chart
// repository.
func (cfg Config) withKind() (Config, error) {
	if cfg.Kind == "" {
		cfg.Kind = KindKustomization
	}
	switch cfg.Kind {
	case KindKustomization:
		if cfg.Namespaces != "" {
			return cfg, fmt.Errorf("-namespaces places HelmReleases: it needs -kind %s", KindHelmRelease)
		}
	case KindHelmRelease:
		return cfg.withHelmDefaults()
	default:
		return cfg, fmt.Errorf("unknown kind %q: choose %s or %s", cfg.Kind, KindKustomization, KindHelmRelease)
	}
	if cfg.Source == "" {
		cfg.Source = SourceGit
	}
	switch cfg.Source {
	case SourceGit, SourceOCI, SourceBucket:
	case SourceHelm:
		return cfg, fmt.Errorf("source %s needs -kind %s", SourceHelm, KindHelmRelease)
	default:
		return cfg, fmt.Errorf("unknown source %q: choose %s, %s or %s", cfg.Source, SourceGit, SourceOCI, SourceBucket)
	}
	if cfg.Layout == "" {
		cfg.Layout = LayoutRepoPerApp
	}
	if cfg.Layout != LayoutRepoPerApp && cfg.Layout != LayoutMonorepo {
		return cfg, fmt.Errorf("unknown layout %q: choose %s or %s", cfg.Layout, LayoutRepoPerApp, LayoutMonorepo)
	}
	if cfg.Layout == LayoutMonorepo && cfg.Source != SourceGit {
		return cfg, fmt.Errorf("layout %s needs -source %s: the %s source has one source per application", LayoutMonorepo, SourceGit, cfg.Source)
	}
	return cfg, nil
}

// withHelmDefaults checks and fills in the source and layout of a
// -kind helmrelease run: one chart repository shared by every release.
func (cfg Config) withHelmDefaults() (Config, error) {
	if cfg.Source == "" {
		cfg.Source = SourceHelm
	}
	if cfg.Source != SourceHelm {
		return cfg, fmt.Errorf("kind %s serves its chart from one chart repository: -source %s, not %q", KindHelmRelease, SourceHelm, cfg.Source)
	}
	if cfg.Layout == "" {
		cfg.Layout = LayoutMonorepo
	}
	if cfg.Layout != LayoutMonorepo {
		return cfg, fmt.Errorf("kind %s shares one HelmRepository between the releases: -layout %s, not %q", KindHelmRelease, LayoutMonorepo, cfg.Layout)
	}
	if cfg.Gate {
		return cfg, fmt.Errorf("-gate measures Kustomizations only, not -kind %s", KindHelmRelease)
	}
	if cfg.Namespaces == "" {
		cfg.Namespaces = NamespacesPerApp
	}
	if cfg.Namespaces != NamespacesPerApp && cfg.Namespaces != NamespacesOne {
		return cfg, fmt.Errorf("unknown namespaces %q: choose %s or %s", cfg.Namespaces, NamespacesPerApp, NamespacesOne)
	}
	return cfg, nil
}

// ChangeCost is what a change cost the controller.
type ChangeCost struct {
	// Requests is what it asked of the API server.
	Requests int64 `json:"requests"`
	// CPUSeconds is its CPU.
	CPUSeconds float64 `json:"cpu_seconds"`
}

// ChangeSteps splits the change phase's time.
type ChangeSteps struct {
	// ChangedSeconds runs from the start of the change until the source
	// server holds it (the commit, push or put returned).
	ChangedSeconds float64 `json:"changed_seconds"`
	// ArtifactSeconds runs from the start of the change until application
	// 0's source has an artifact of it, as a watch of the source saw it
	// (a watch of its own: it may see it after the Kustomization's).
	ArtifactSeconds float64 `json:"artifact_seconds"`
}

// Result holds the figures of one run. The JSON keys are the benchmark's
// published format; Details are shown in the table only.
type Result struct {
	// N is the number of applications.
	N int `json:"n"`
	// Source is the kind of the sources: GitRepository, OCIRepository,
	// Bucket or HelmRepository; ImageRepository with -image.
	Source string `json:"source"`
	// Layout is the source layout.
	Layout string `json:"layout"`
	// ReadySeconds runs from the creation of the first source until every
	// Kustomization is Ready; with -gate, from the request that opens the
	// gate.
	ReadySeconds float64 `json:"ready_seconds"`
	// PeakRSSBytes is the controller's VmHWM at the end of the run.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// CPUSeconds is the controller's utime+stime at the end of the ready
	// phase (it includes the start-up, shown in Details).
	CPUSeconds float64 `json:"cpu_seconds"`
	// APIRequests is the sum of the controller's rest_client_requests_total
	// at the end of the ready phase.
	APIRequests int64 `json:"api_requests"`
	// ReadyRequests is what the controller asked of the API server from
	// the creation of the first object until every application was Ready
	// (and its requests stood still), per application.
	ReadyRequests *RequestBudget `json:"ready_requests,omitempty"`
	// ChangeToAppliedSeconds runs from the change to app 0 (a commit, a
	// push or a put) until its Kustomization reports the new revision as
	// applied. A -kind helmrelease run has no change phase and leaves it
	// out.
	ChangeToAppliedSeconds float64 `json:"change_to_applied_seconds,omitempty"`
	// ChangeSteps splits ChangeToAppliedSeconds: when the change was in
	// the source server, and when the source had the artifact of it.
	ChangeSteps *ChangeSteps `json:"change_steps,omitempty"`
	// NoopTickSeconds runs from the first reconcile request of the no-op
	// tick until every object has handled it.
	NoopTickSeconds float64 `json:"noop_tick_seconds"`
	// NoopTickDownloads counts the content the source server served
	// during the no-op tick, by what it was: git "fetches"; OCI
	// "manifest_gets" and "blob_gets"; bucket "object_gets". Every count
	// must be 0.
	NoopTickDownloads map[string]int64 `json:"noop_tick_downloads"`
	// NoopTickWrites is the number of downloads plus the number of
	// artifact files written during the no-op tick (with -kind
	// helmrelease, plus the object writes and new release versions of
	// HelmResult); it must be 0.
	NoopTickWrites int64 `json:"noop_tick_writes"`
	// NoopTickRequests is what the controller asked of the API server
	// over the no-op tick, per application, and
	// NoopTickRequestsPerObject the same per object ticked (the sources
	// and the applications' objects).
	NoopTickRequests          *RequestBudget `json:"noop_tick_requests,omitempty"`
	NoopTickRequestsPerObject float64        `json:"noop_tick_requests_per_object,omitempty"`
	// Gate holds the figures of a -gate run, nil otherwise. In such a run
	// ReadySeconds and the applied and ready timelines count from the
	// gate's opening.
	Gate *GateResult `json:"gate,omitempty"`
	// Helm holds the figures of a -kind helmrelease run, nil otherwise.
	Helm *HelmResult `json:"helm,omitempty"`
	// Alert holds the figures of an -alert run, nil otherwise.
	Alert *AlertResult `json:"alert,omitempty"`
	// Image holds the figures of an -image run, nil otherwise.
	Image *ImageResult `json:"image,omitempty"`
	// UI holds the figures of a -ui run, nil otherwise.
	UI *UIResult `json:"ui,omitempty"`
	// Metrics holds what the controller's metrics endpoint cost once
	// every application was Ready (Kustomization runs).
	Metrics *MetricsResult `json:"metrics,omitempty"`
	// Reference holds the figures of each reference controller in a
	// -controllers reference run, nil otherwise.
	Reference *ReferenceResult `json:"reference,omitempty"`
	// Replicas holds the figures of each replica and the failover of a
	// run with more than one, nil otherwise.
	Replicas *ReplicasResult `json:"replicas,omitempty"`
	// ChangeCost is what the change phase cost the controller, until its
	// requests stood still (Kustomization runs).
	ChangeCost *ChangeCost `json:"change_cost,omitempty"`
	// Generator holds the figures of a -generator run, nil otherwise.
	Generator *GeneratorResult `json:"generator,omitempty"`

	Details Details `json:"-"`
}

// Details are secondary figures, printed but not part of the JSON.
type Details struct {
	Concurrent int
	// SourceServer describes the server of the sources.
	SourceServer string
	// KubeconfigViaEnv tells how the controller got its kubeconfig.
	KubeconfigViaEnv bool
	// SetupSeconds is the time spent starting the control plane, the
	// source server and the controller and writing the sources.
	SetupSeconds float64
	// StartupCPUSeconds is the controller's CPU time once it is ready,
	// before any object exists.
	StartupCPUSeconds float64
	// ReadyDownloads counts the source server's downloads in the ready
	// phase (as NoopTickDownloads counts them).
	ReadyDownloads map[string]int64
	// NoopDownloads and NoopFiles split NoopTickWrites.
	NoopDownloads, NoopFiles int64
	// NoopWrittenFiles names the artifact files written by the tick.
	NoopWrittenFiles []string
	// NoopCPUSeconds is the controller's CPU time during the tick.
	NoopCPUSeconds float64
	// NoopAPIRequests counts the API requests of the tick, by method.
	NoopAPIRequests map[string]int64
	// PeakRSSAnonBytes is the largest RssAnon sampled every 100ms: the
	// peak without the pages of the binary that VmHWM also counts.
	PeakRSSAnonBytes int64
	// ReadyQuantiles are the seconds after which 10%, 50%, 90% and 99% of
	// the Kustomizations were Ready.
	ReadyQuantiles []float64
	// SourceQuantiles and AppliedQuantiles are the same for the sources'
	// first artifact and the Kustomizations' first applied revision: with
	// ReadyQuantiles, where the ready phase's time went.
	SourceQuantiles, AppliedQuantiles []float64
	// ReadyCPU and NoopCPU are the CPU seconds of every process of the
	// run (see processCPU) in the ready phase and the no-op tick.
	ReadyCPU, NoopCPU map[string]float64
	// ReadyServerRequests and NoopServerRequests are the requests the API
	// server served in those phases, for the controller and
	// kube-controller-manager alike, largest count first.
	ReadyServerRequests, NoopServerRequests []string
}

// Run starts a control plane with kube-controller-manager, a loopback
// source server (git, OCI registry or S3) and the windlass controller, and
// measures the three phases: every application becoming Ready, one change
// applied, and a tick with nothing changed.
//
// When cl is nil, Run starts a Cluster of its own and stops it at the end;
// several runs may share one Cluster if each cleans up (Config.Cleanup).
func Run(ctx context.Context, cl *Cluster, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Controllers == ControllersNone {
		return runFloor(ctx, cl, cfg)
	}
	setupStart := time.Now()
	if cl == nil {
		if cl, err = startCluster(cfg.Controllers, true, cfg.Log); err != nil {
			return nil, err
		}
		defer cl.Stop(cfg.Log)
	}
	tmp, err := os.MkdirTemp("", "windlass-bench-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	r := &run{cfg: cfg}
	if err := r.setUp(ctx, cl, tmp); err != nil {
		return nil, err
	}
	defer r.kit.Close()
	if err := r.startController(ctx, cl, tmp); err != nil {
		return nil, err
	}
	defer r.ctrl.stop(10 * time.Second)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	peakAnon := r.ctrl.sampleAnon(sampleCtx, 100*time.Millisecond)
	startup, err := r.ctrl.stats()
	if err != nil {
		return nil, err
	}
	if cfg.Alert {
		if err := r.startAlerts(ctx); err != nil {
			return nil, err
		}
		defer r.alerts.Close()
	}
	res := r.newResult()
	res.Details.StartupCPUSeconds = startup.CPUSeconds
	res.Details.SetupSeconds = time.Since(setupStart).Seconds()
	r.logf("%s %s n=%d: set up in %.1fs (namespace %s)", cfg.Source, cfg.Layout, cfg.N, res.Details.SetupSeconds, r.ns)
	if err := r.measure(ctx, res); err != nil {
		if r.ctrl.Exited() && !strings.Contains(err.Error(), "output:\n") {
			err = r.withOutput(err)
		}
		return nil, err
	}
	res.Details.PeakRSSAnonBytes = peakAnon()
	if r.ref != nil {
		r.ref.finish(res)
	}
	if r.alerts != nil {
		if err := r.alertPhase(ctx, res); err != nil {
			return nil, err
		}
	}
	if r.ctrl.Exited() {
		return nil, r.withOutput(errors.New("the controller exited during the run"))
	}
	if err := r.failoverPhase(ctx, res); err != nil {
		return nil, err
	}
	if cfg.Cleanup {
		if err := deleteAlerts(ctx, r.c, r.ns); err != nil {
			return nil, r.withOutput(err)
		}
		if err := cleanup(ctx, r.c, r.ns, r.kit, r.apps); err != nil {
			return nil, r.withOutput(err)
		}
	}
	return res, nil
}

// run is the state of one Run: its configuration, the benchmark's client,
// the namespace, the source server and the controller.
type run struct {
	cfg     Config
	restCfg *rest.Config
	c       client.WithWatch
	ns      string
	kit     sourceKit
	ctrl    *controller
	// apps is the kind of the applications' objects, set by measure.
	apps appKind
	// alerts is the Provider's service of an -alert run, nil otherwise.
	alerts *alertKit
	// uiAddr is the address of the controller's web UI in a -ui run.
	uiAddr string
	// ref are the reference controllers of a -controllers reference run
	// (r.ctrl is then source-controller, with kustomize-controller in its
	// group), nil otherwise.
	ref *referenceRun
	// replicas are the replicas of a run with more than one (r.ctrl is
	// the first, the others in its group), nil otherwise.
	replicas *replicaRun
}

// logf writes a progress line.
func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "bench: "+format+"\n", args...)
}

// setUp makes the benchmark's client and namespace, and starts the source
// server with the first revision of every application.
func (r *run) setUp(ctx context.Context, cl *Cluster, tmp string) error {
	// The benchmark's own client is not rate limited, so that creating
	// and annotating objects is not what is measured.
	r.restCfg = rest.CopyConfig(cl.Env.Config)
	r.restCfg.QPS, r.restCfg.Burst = 1000, 2000
	var err error
	if r.c, err = client.NewWithWatch(r.restCfg, client.Options{Scheme: cl.Env.Scheme}); err != nil {
		return err
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := r.c.Create(ctx, nsObj); err != nil {
		return fmt.Errorf("creating the namespace: %w", err)
	}
	r.ns = nsObj.Name
	if r.kit, err = startSources(ctx, r.cfg, tmp); err != nil {
		return err
	}
	if err := r.kit.Prepare(ctx, r.c, r.ns); err != nil {
		r.kit.Close()
		return err
	}
	return nil
}

// startController starts `windlass controller` with its storage in tmp
// and waits until it is ready.
func (r *run) startController(ctx context.Context, cl *Cluster, tmp string) error {
	if r.cfg.Controllers == ControllersReference {
		return r.startReference(ctx, cl, tmp)
	}
	if r.cfg.Replicas > 1 {
		return r.startReplicas(ctx, cl, tmp)
	}
	// -ui collects the controller's garbage through pprof before reading
	// its heap.
	if (r.cfg.ProfileDir != "" || r.cfg.UI) && r.cfg.PprofAddr == "" {
		addrs, err := childproc.FreeAddrs(1)
		if err != nil {
			return err
		}
		r.cfg.PprofAddr = addrs[0]
	}
	var err error
	var extra []string
	if r.cfg.Alert {
		extra = append(extra, "--rate-limit-interval", r.cfg.AlertWindow.String())
	}
	if r.cfg.UI {
		addrs, err := childproc.FreeAddrs(1)
		if err != nil {
			return err
		}
		r.uiAddr = addrs[0]
		extra = append(extra, "--ui-addr", r.uiAddr)
	}
	r.ctrl, err = startController(cl.Bin, cl.Kubeconfig, filepath.Join(tmp, "storage"), r.cfg.Concurrent, r.cfg.PprofAddr, r.cfg.KubeconfigViaEnv, extra...)
	if err != nil {
		return err
	}
	if err := r.ctrl.waitReady(ctx, time.Minute); err != nil {
		r.ctrl.stop(10 * time.Second)
		return r.withOutput(err)
	}
	return nil
}

// withOutput adds the end of the controller's output to err.
func (r *run) withOutput(err error) error {
	if err == nil {
		return nil
	}
	out := outputTail(r.ctrl, 8000)
	what := "windlass controller"
	if r.ref != nil {
		what = "a reference controller"
	} else if r.replicas != nil {
		what = "a windlass replica"
	}
	if r.ctrl.Exited() {
		return fmt.Errorf("%w\n%s exited (%v); output:\n%s", err, what, r.ctrl.Err(), out)
	}
	return fmt.Errorf("%w\n%s output:\n%s", err, what, out)
}

// newResult returns the Result of the run with its settings filled in.
func (r *run) newResult() *Result {
	res := &Result{N: r.cfg.N, Source: r.kit.Kind(), Layout: r.cfg.Layout}
	res.Details.Concurrent = r.cfg.Concurrent
	res.Details.SourceServer = r.kit.Server()
	res.Details.KubeconfigViaEnv = r.cfg.KubeconfigViaEnv
	return res
}

// Cluster is what runs may share: the test control plane with
// kube-controller-manager, an administrator's kubeconfig for it, and the
// windlass binary.
type Cluster struct {
	// Env is the control plane.
	Env *testenv.Environment
	// Kubeconfig is the path of the kubeconfig the controller uses: a
	// ServiceAccount's token (see serviceAccountKubeconfig).
	Kubeconfig string
	// Bin is the windlass binary built from this checkout; empty in a
	// Cluster for the reference controllers.
	Bin string
	// Reference are the reference controllers' binaries, built by
	// hack/reference.sh, in a Cluster started for them; nil otherwise.
	Reference []referenceBinary

	dir     string
	stopKCM context.CancelFunc
}

// StartCluster builds ./cmd/windlass while it starts the control plane and
// kube-controller-manager. It builds as a plain `go build` does, with the
// build cache of the tests, for runs that check the benchmark rather than
// measure: Run without a Cluster builds the binary as the image does.
func StartCluster() (*Cluster, error) {
	return startCluster(ControllersWindlass, false, io.Discard)
}

// startCluster starts the control plane and kube-controller-manager while
// it builds the binaries that controllers names (see Cluster.build; as the
// image does when asImage), reporting progress to logw.
func startCluster(controllers string, asImage bool, logw io.Writer) (_ *Cluster, err error) {
	cl := &Cluster{}
	if cl.dir, err = os.MkdirTemp("", "windlass-bench-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cl.Stop(io.Discard)
		}
	}()
	built := make(chan error, 1)
	go func() { built <- cl.build(controllers, asImage, logw) }()
	env, err := testenv.Start()
	if err != nil {
		<-built
		return nil, err
	}
	cl.Env = env
	var kcmCtx context.Context
	kcmCtx, cl.stopKCM = context.WithCancel(context.Background())
	if err := env.StartControllerManager(kcmCtx); err != nil {
		<-built
		return nil, err
	}
	if err := <-built; err != nil {
		return nil, err
	}
	if cl.Kubeconfig, err = serviceAccountKubeconfig(context.Background(), env, cl.dir); err != nil {
		return nil, err
	}
	return cl, nil
}

// Stop stops kube-controller-manager and the control plane and removes the
// binary; problems are reported to logw.
func (cl *Cluster) Stop(logw io.Writer) {
	if cl.stopKCM != nil {
		cl.stopKCM()
	}
	if cl.Env != nil {
		if err := cl.Env.Stop(); err != nil {
			fmt.Fprintln(logw, "bench: stopping the control plane:", err)
		}
	}
	_ = os.RemoveAll(cl.dir)
}
