package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// Config describes one benchmark run.
type Config struct {
	// N is the number of applications.
	N int
	// Layout is LayoutRepoPerApp or LayoutMonorepo.
	Layout string
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
	// Cleanup deletes the run's Kustomizations, GitRepositories and
	// namespace at the end, while the controller still runs, so that a
	// later run on the same Cluster does not see them.
	Cleanup bool
	// ReadyTimeout bounds the wait for every Kustomization to be Ready;
	// the later waits are bounded by it too.
	ReadyTimeout time.Duration
	// GitServer is GitServerNative (the default) or GitServerHTTPBackend:
	// which loopback git server serves the repositories.
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
	// GateQuiet is the window over which the held phase's API requests
	// are counted; 10s when zero.
	GateQuiet time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Result holds the figures of one run. The JSON keys are the benchmark's
// published format; Details are shown in the table only.
type Result struct {
	// N is the number of applications.
	N int `json:"n"`
	// Layout is the source layout.
	Layout string `json:"layout"`
	// ReadySeconds runs from the creation of the first GitRepository until
	// every Kustomization is Ready; with -gate, from the request that opens
	// the gate.
	ReadySeconds float64 `json:"ready_seconds"`
	// PeakRSSBytes is the controller's VmHWM at the end of the run.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// CPUSeconds is the controller's utime+stime at the end of the ready
	// phase (it includes the start-up, shown in Details).
	CPUSeconds float64 `json:"cpu_seconds"`
	// APIRequests is the sum of the controller's rest_client_requests_total
	// at the end of the ready phase.
	APIRequests int64 `json:"api_requests"`
	// ChangeToAppliedSeconds runs from the commit that changes app 0 until
	// its Kustomization reports the new revision as applied.
	ChangeToAppliedSeconds float64 `json:"change_to_applied_seconds"`
	// NoopTickSeconds runs from the first reconcile request of the no-op
	// tick until every object has handled it.
	NoopTickSeconds float64 `json:"noop_tick_seconds"`
	// NoopTickWrites is the number of clones plus the number of artifact
	// files written during the no-op tick; it must be 0.
	NoopTickWrites int64 `json:"noop_tick_writes"`
	// Gate holds the figures of a -gate run, nil otherwise. In such a run
	// ReadySeconds and the applied and ready timelines count from the
	// gate's opening.
	Gate *GateResult `json:"gate,omitempty"`

	Details Details `json:"-"`
}

// Details are secondary figures, printed but not part of the JSON.
type Details struct {
	Concurrent int
	// GitServer is the git server that served the repositories.
	GitServer string
	// KubeconfigViaEnv tells how the controller got its kubeconfig.
	KubeconfigViaEnv bool
	// SetupSeconds is the time spent starting the control plane, the git
	// server and the controller and writing the repositories.
	SetupSeconds float64
	// StartupCPUSeconds is the controller's CPU time once it is ready,
	// before any object exists.
	StartupCPUSeconds float64
	// ReadyClones counts upload-pack requests in the ready phase.
	ReadyClones int64
	// NoopClones and NoopFiles split NoopTickWrites.
	NoopClones, NoopFiles int64
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
	// SourceQuantiles and AppliedQuantiles are the same for the
	// GitRepositories' first artifact and the Kustomizations' first
	// applied revision: with ReadyQuantiles, where the ready phase's time
	// went.
	SourceQuantiles, AppliedQuantiles []float64
	// ReadyCPU and NoopCPU are the CPU seconds of every process of the
	// run (see processCPU) in the ready phase and the no-op tick.
	ReadyCPU, NoopCPU map[string]float64
	// ReadyServerRequests and NoopServerRequests are the requests the API
	// server served in those phases, for the controller and
	// kube-controller-manager alike, largest count first.
	ReadyServerRequests, NoopServerRequests []string
}

// Run starts a control plane with kube-controller-manager, a loopback git
// server and the windlass controller, and measures the three phases: every
// application becoming Ready, one change applied, and a tick with nothing
// changed.
//
// When cl is nil, Run starts a Cluster of its own and stops it at the end;
// several runs may share one Cluster if each cleans up (Config.Cleanup).
func Run(ctx context.Context, cl *Cluster, cfg Config) (*Result, error) {
	if cfg.N < 1 {
		return nil, errors.New("n must be at least 1")
	}
	if cfg.Layout != LayoutRepoPerApp && cfg.Layout != LayoutMonorepo {
		return nil, fmt.Errorf("unknown layout %q: choose %s or %s", cfg.Layout, LayoutRepoPerApp, LayoutMonorepo)
	}
	if cfg.GitServer == "" {
		cfg.GitServer = GitServerNative
	}
	if cfg.GitServer != GitServerNative && cfg.GitServer != GitServerHTTPBackend {
		return nil, fmt.Errorf("unknown git server %q: choose %s or %s", cfg.GitServer, GitServerNative, GitServerHTTPBackend)
	}
	if cfg.Concurrent < 1 {
		cfg.Concurrent = manager.DefaultOptions().Concurrent
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Minute
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(logw, "bench: "+format+"\n", args...)
	}
	setupStart := time.Now()
	if cl == nil {
		var err error
		if cl, err = StartCluster(); err != nil {
			return nil, err
		}
		defer cl.Stop(logw)
	}
	tmp, err := os.MkdirTemp("", "windlass-bench-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env, bin, kubeconfig := cl.Env, cl.Bin, cl.Kubeconfig

	// The benchmark's own client is not rate limited, so that creating
	// and annotating objects is not what is measured.
	restCfg := rest.CopyConfig(env.Config)
	restCfg.QPS, restCfg.Burst = 1000, 2000
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return nil, err
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := c.Create(ctx, nsObj); err != nil {
		return nil, fmt.Errorf("creating the namespace: %w", err)
	}
	ns := nsObj.Name

	// The git server, behind the clone-counting proxy.
	srv, err := gitserver.New(filepath.Join(tmp, "git"))
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	gitURL, err := startGitServer(srv, cfg.GitServer)
	if err != nil {
		return nil, err
	}
	proxy, err := startCloneCounter(gitURL)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	repos, err := writeRepos(ctx, srv, cfg.Layout, cfg.N)
	if err != nil {
		return nil, err
	}

	if cfg.ProfileDir != "" && cfg.PprofAddr == "" {
		addrs, err := childproc.FreeAddrs(1)
		if err != nil {
			return nil, err
		}
		cfg.PprofAddr = addrs[0]
	}
	ctrl, err := startController(bin, kubeconfig, filepath.Join(tmp, "storage"), cfg.Concurrent, cfg.PprofAddr, cfg.KubeconfigViaEnv)
	if err != nil {
		return nil, err
	}
	defer ctrl.stop(10 * time.Second)
	withOutput := func(err error) error {
		if err == nil {
			return nil
		}
		out := ctrl.Output()
		if len(out) > 8000 {
			out = "…" + out[len(out)-8000:]
		}
		if ctrl.Exited() {
			return fmt.Errorf("%w\nwindlass controller exited (%v); output:\n%s", err, ctrl.Err(), out)
		}
		return fmt.Errorf("%w\nwindlass controller output:\n%s", err, out)
	}
	if err := ctrl.waitReady(ctx, time.Minute); err != nil {
		return nil, withOutput(err)
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	peakAnon := ctrl.sampleAnon(sampleCtx, 100*time.Millisecond)
	startup, err := ctrl.stats()
	if err != nil {
		return nil, err
	}
	res := &Result{N: cfg.N, Layout: cfg.Layout}
	res.Details.Concurrent = cfg.Concurrent
	res.Details.GitServer = cfg.GitServer
	res.Details.KubeconfigViaEnv = cfg.KubeconfigViaEnv
	res.Details.StartupCPUSeconds = startup.CPUSeconds
	res.Details.SetupSeconds = time.Since(setupStart).Seconds()
	logf("%s n=%d: set up in %.1fs (namespace %s)", cfg.Layout, cfg.N, res.Details.SetupSeconds, ns)

	// Phase 1: every application Ready; with -gate, first held behind the
	// closed gate, then released by opening it.
	var sources []client.Object
	for name := range repos {
		sources = append(sources, gitRepository(ns, name, proxy.URL+"/"+name+".git"))
	}
	sort.Slice(sources, func(i, j int) bool { return sources[i].GetName() < sources[j].GetName() })
	var kss []client.Object
	for i := range cfg.N {
		k := kustomization(ns, cfg.Layout, i)
		if cfg.Gate {
			k.Spec.Gates = []meta.NamespacedObjectReference{{Name: gateName}}
		}
		kss = append(kss, k)
	}
	all := append(append([]client.Object{}, sources...), kss...)
	readyCtx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	cpu0, served0 := processCPU(), serverRequestsOrNil(ctx, restCfg)
	profiled := startProfiles(ctx, cfg, restCfg, logf)
	defer profiled()
	var tl timeline
	if cfg.Gate {
		heads, err := repoHeads(repos)
		if err != nil {
			return nil, err
		}
		gr := &gatedRun{c: c, ns: ns, n: cfg.N, ctrl: ctrl, restCfg: restCfg, quiet: cfg.GateQuiet, logf: logf}
		tl, res.Gate, err = gr.run(readyCtx, sources, kss, heads)
		if err != nil {
			return nil, withOutput(err)
		}
	} else if tl, err = createAndWaitReady(readyCtx, c, ns, len(sources), cfg.N, all, logf); err != nil {
		return nil, withOutput(err)
	}
	res.ReadySeconds = tl.seconds
	res.Details.SourceQuantiles = tl.source
	res.Details.AppliedQuantiles = tl.applied
	res.Details.ReadyQuantiles = tl.ready
	st, err := ctrl.stats()
	if err != nil {
		return nil, err
	}
	res.CPUSeconds = st.CPUSeconds
	res.Details.ReadyCPU = cpuDelta(cpu0, processCPU())
	res.Details.ReadyServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, restCfg))
	if res.APIRequests, _, err = ctrl.apiRequests(); err != nil {
		return nil, err
	}
	res.Details.ReadyClones = proxy.Clones()
	logf("all %d ready in %.2fs; API server requests: %s", cfg.N, res.ReadySeconds, strings.Join(res.Details.ReadyServerRequests, " "))

	// Phase 2: one change to app 0, with a reconcile request on its
	// source.
	changeCtx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	repo := repos[sourceName(cfg.Layout, 0)]
	start := time.Now()
	sha, err := repo.Commit(branch, map[string]string{appPath(cfg.Layout, 0) + "/app.yaml": appManifests(2)}, "change app-0")
	if err != nil {
		return nil, err
	}
	token := "bench-change-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := requestReconcile(changeCtx, c, []client.Object{gitRepository(ns, sourceName(cfg.Layout, 0), "")}, token, 1); err != nil {
		return nil, err
	}
	if err := waitAll(changeCtx, c, ns, &kustomizev1.KustomizationList{}, 1, appliedRevision(sha), describeKs,
		client.MatchingFields{"metadata.name": appName(0)}); err != nil {
		return nil, withOutput(fmt.Errorf("waiting for the change to be applied: %w", err))
	}
	res.ChangeToAppliedSeconds = time.Since(start).Seconds()
	logf("change applied in %.2fs", res.ChangeToAppliedSeconds)
	// Let every Kustomization settle on its source's head (in the monorepo
	// layout, every one of them applies the new revision).
	heads, err := repoHeads(repos)
	if err != nil {
		return nil, err
	}
	settled := func(obj client.Object) bool {
		k := obj.(*kustomizev1.Kustomization)
		return appliedRevision(heads[k.Spec.SourceRef.Name])(k)
	}
	if err := waitAll(changeCtx, c, ns, &kustomizev1.KustomizationList{}, cfg.N, settled, describeKs); err != nil {
		return nil, withOutput(fmt.Errorf("waiting for every Kustomization to apply its source's head: %w", err))
	}

	// Phase 3: a tick with nothing changed.
	tickCtx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	before, err := snapshotStorage(ctrl.StoragePath)
	if err != nil {
		return nil, err
	}
	clones0 := proxy.Clones()
	st0, err := ctrl.stats()
	if err != nil {
		return nil, err
	}
	_, api0, err := ctrl.apiRequests()
	if err != nil {
		return nil, err
	}
	cpu0, served0 = processCPU(), serverRequestsOrNil(ctx, restCfg)
	token = "bench-noop-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	start = time.Now()
	if err := requestReconcile(tickCtx, c, all, token, workers); err != nil {
		return nil, err
	}
	if err := waitAll(tickCtx, c, ns, &sourcev1.GitRepositoryList{}, len(sources), handled(token), describeGit); err != nil {
		return nil, withOutput(fmt.Errorf("waiting for every GitRepository to handle the tick: %w", err))
	}
	ksHandled := func(obj client.Object) bool { return handled(token)(obj) && ksReady(obj) }
	if err := waitAll(tickCtx, c, ns, &kustomizev1.KustomizationList{}, cfg.N, ksHandled, describeKs); err != nil {
		return nil, withOutput(fmt.Errorf("waiting for every Kustomization to handle the tick: %w", err))
	}
	res.NoopTickSeconds = time.Since(start).Seconds()
	res.Details.NoopCPU = cpuDelta(cpu0, processCPU())
	res.Details.NoopServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, restCfg))
	// Give writes that follow the status update a moment to land.
	time.Sleep(time.Second)
	after, err := snapshotStorage(ctrl.StoragePath)
	if err != nil {
		return nil, err
	}
	written := writtenFiles(before, after)
	for i, p := range written {
		if rel, err := filepath.Rel(ctrl.StoragePath, p); err == nil {
			written[i] = rel
		}
	}
	sort.Strings(written)
	res.Details.NoopWrittenFiles = written
	res.Details.NoopClones = proxy.Clones() - clones0
	res.Details.NoopFiles = int64(len(written))
	res.NoopTickWrites = res.Details.NoopClones + res.Details.NoopFiles
	st1, err := ctrl.stats()
	if err != nil {
		return nil, err
	}
	res.Details.NoopCPUSeconds = st1.CPUSeconds - st0.CPUSeconds
	_, api1, err := ctrl.apiRequests()
	if err != nil {
		return nil, err
	}
	res.Details.NoopAPIRequests = map[string]int64{}
	for m, v := range api1 {
		if d := v - api0[m]; d != 0 {
			res.Details.NoopAPIRequests[m] = d
		}
	}
	res.PeakRSSBytes = st1.PeakRSSBytes
	res.Details.PeakRSSAnonBytes = peakAnon()
	logf("no-op tick handled in %.2fs: %d clones, %d files written %s",
		res.NoopTickSeconds, res.Details.NoopClones, res.Details.NoopFiles, strings.Join(written, " "))
	if ctrl.Exited() {
		return nil, withOutput(errors.New("the controller exited during the run"))
	}
	if cfg.Cleanup {
		if err := cleanup(ctx, c, ns); err != nil {
			return nil, withOutput(err)
		}
	}
	return res, nil
}

// workers is how many objects the benchmark creates or annotates at once.
const workers = 16

// timeline is what the ready phase measures: the seconds until every
// Kustomization was Ready, and the 10%, 50%, 90% and 99% quantiles of the
// times the sources got their first artifact and the Kustomizations first
// applied and were Ready.
type timeline struct {
	seconds                float64
	source, applied, ready []float64
}

// createAndWaitReady creates all (nSources GitRepositories, then n
// Kustomizations), workers at a time, and waits until every Kustomization
// is Ready, recording the timeline from the first creation.
func createAndWaitReady(ctx context.Context, c client.WithWatch, ns string, nSources, n int, all []client.Object,
	logf func(string, ...any)) (timeline, error) {
	// The waits watch from before the first object is created, so that
	// the timeline holds the objects done while others are being created.
	start := time.Now()
	sourceAt, appliedAt, readyAt := firstTimes{start: start}, firstTimes{start: start}, firstTimes{start: start}
	sourcesDone := make(chan struct{})
	go func() {
		defer close(sourcesDone)
		// Only a timeline: the Kustomizations' wait below reports failures.
		_ = waitAll(ctx, c, ns, &sourcev1.GitRepositoryList{}, nSources, sourceAt.record(hasArtifact), describeGit)
	}()
	firstReady := func(obj client.Object) bool {
		appliedAt.record(hasApplied)(obj)
		return readyAt.record(ksReady)(obj)
	}
	ready := make(chan error, 1)
	go func() {
		ready <- waitAll(ctx, c, ns, &kustomizev1.KustomizationList{}, n, firstReady, describeKs)
	}()
	if err := parallel(ctx, len(all), workers, func(i int) error {
		return c.Create(ctx, all[i].DeepCopyObject().(client.Object))
	}); err != nil {
		return timeline{}, fmt.Errorf("creating the objects: %w", err)
	}
	logf("created %d objects in %.1fs", len(all), time.Since(start).Seconds())
	if err := <-ready; err != nil {
		return timeline{}, fmt.Errorf("waiting for every Kustomization to be Ready: %w", err)
	}
	tl := timeline{seconds: time.Since(start).Seconds()}
	<-sourcesDone
	tl.source, tl.applied, tl.ready = sourceAt.quantiles(), appliedAt.quantiles(), readyAt.quantiles()
	return tl, nil
}

// repoHeads returns the commit at the head of branch of every repository,
// by name.
func repoHeads(repos map[string]*gitserver.Repo) (map[string]string, error) {
	heads := map[string]string{}
	for name, r := range repos {
		var err error
		if heads[name], err = r.Head(branch); err != nil {
			return nil, err
		}
	}
	return heads, nil
}

// cleanup deletes the Kustomizations (which prune their workloads) and the
// GitRepositories of namespace ns, waits until the controller has let them
// go, deletes the Gates (after their consumers, which they must not hold)
// and the namespace.
func cleanup(ctx context.Context, c client.WithWatch, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, obj := range []client.Object{&kustomizev1.Kustomization{}, &sourcev1.GitRepository{}} {
		if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("cleaning up: %w", err)
		}
	}
	for _, list := range []client.ObjectList{&kustomizev1.KustomizationList{}, &sourcev1.GitRepositoryList{}} {
		for {
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("cleaning up: %w", err)
			}
			if apimeta.LenList(list) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cleaning up: %d objects left: %w", apimeta.LenList(list), ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	if err := c.DeleteAllOf(ctx, &gatingv1alpha1.Gate{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	return c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// The loopback git servers a run can use. Both serve the same bare
// repositories over smart HTTP; they differ in what serving costs the
// machine the controller runs on.
const (
	// GitServerNative answers upload-pack in process with go-git
	// (gitserver.StartNativeHTTP): about a millisecond of CPU per clone.
	GitServerNative = "native"
	// GitServerHTTPBackend runs git-http-backend and the git processes it
	// starts for every request: tens of milliseconds of CPU per clone,
	// taken from the cores the controller and the control plane share.
	GitServerHTTPBackend = "http-backend"
)

// startGitServer serves srv's repositories with the named git server and
// returns their base URL.
func startGitServer(srv *gitserver.Server, name string) (string, error) {
	if name == GitServerHTTPBackend {
		return srv.StartHTTP()
	}
	return srv.StartNativeHTTP()
}

// writeRepos creates the repositories of layout on srv, with the first
// revision of every application, and returns them by name (the name of
// the GitRepository that serves each).
func writeRepos(ctx context.Context, srv *gitserver.Server, layout string, n int) (map[string]*gitserver.Repo, error) {
	if layout == LayoutMonorepo {
		repo, err := srv.InitRepo(monorepoName+".git", branch)
		if err != nil {
			return nil, err
		}
		files := map[string]string{}
		for i := range n {
			files[appPath(layout, i)+"/app.yaml"] = appManifests(1)
		}
		if _, err := repo.Commit(branch, files, "initial"); err != nil {
			return nil, err
		}
		return map[string]*gitserver.Repo{monorepoName: repo}, nil
	}
	list := make([]*gitserver.Repo, n)
	err := parallel(ctx, n, 8, func(i int) error {
		repo, err := srv.InitRepo(appName(i)+".git", branch)
		if err != nil {
			return err
		}
		if _, err := repo.Commit(branch, map[string]string{appPath(layout, i) + "/app.yaml": appManifests(1)}, "initial"); err != nil {
			return err
		}
		list[i] = repo
		return nil
	})
	if err != nil {
		return nil, err
	}
	repos := map[string]*gitserver.Repo{}
	for i, r := range list {
		repos[appName(i)] = r
	}
	return repos, nil
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
	// Bin is the windlass binary built from this checkout.
	Bin string

	dir     string
	stopKCM context.CancelFunc
}

// StartCluster builds ./cmd/windlass while it starts the control plane and
// kube-controller-manager.
func StartCluster() (_ *Cluster, err error) {
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
	go func() {
		var err error
		cl.Bin, err = buildWindlass(testenv.RepoRoot(), cl.dir)
		built <- err
	}()
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
