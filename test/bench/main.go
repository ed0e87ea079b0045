// Command bench measures Windlass at scale: it runs the real `windlass
// controller` binary as a child process against the test control plane
// (etcd, kube-apiserver and kube-controller-manager, see internal/testutil/testenv)
// and a loopback source server (git, OCI registry or S3), with N
// applications, and reports how long
// they take to become Ready, the controller's peak memory, CPU time and API
// requests, how fast one change is applied, and what a tick with nothing
// changed costs.
//
//	go run ./test/bench -n 100 -layout repo-per-app -out result.json
//	go run ./test/bench -n 100 -layout monorepo -gate -out gate.json
//	go run ./test/bench -n 100 -source oci -out oci.json
//	go run ./test/bench -n 100 -source bucket -out bucket.json
//	go run ./test/bench -n 1000 -kind helmrelease -out helm.json
//	go run ./test/bench -n 1000 -kind helmrelease -namespaces one -out helm-one.json
//	go run ./test/bench -n 1000 -layout monorepo -alert -out alert.json
//	go run ./test/bench -n 100 -image -image-tags 1000 -out image.json
//	go run ./test/bench -n 1000 -ui -out ui.json
//	go run ./test/bench -controllers reference -n 1000 -out ref.json
//
// Every application is a Deployment scaled to zero, a ServiceAccount, a
// Service and a ConfigMap, applied by a Kustomization with prune, wait, a
// one-minute timeout and its name substituted through postBuild. The
// layouts are repo-per-app (N repositories and GitRepositories) and
// monorepo (one repository with N folders, one GitRepository).
//
// -source picks the kind of the sources (git by default, as above):
//
//   - oci: each application is pushed with internal/oci.Push as an
//     artifact of its own (repository app-N, tag latest, with source and
//     revision annotations) to one go-containerregistry registry served
//     in process on loopback (referrers API on); each has an
//     OCIRepository (spec.insecure, plain HTTP) that follows the tag.
//   - bucket: one versitygw S3 gateway (the test servers' binary, see
//     internal/testutil/testservers; it checks SigV4 signatures) holds one
//     bucket with the prefix app-N/ per application; each has a Bucket
//     with that prefix, spec.insecure and a secretRef to one Secret with
//     the accesskey and secretkey. The Buckets reach the gateway through a
//     counting reverse proxy that keeps the Host header, which the
//     signature covers.
//
// Either is repo-per-app only: a source per application.
//
// -kind helmrelease installs every application with a HelmRelease instead
// of a Kustomization (-source helm, the layout monorepo: one source for
// every application). The benchmark serves one HTTP chart repository on
// loopback: an index.yaml and one chart package built with the Helm SDK,
// whose templates are the Deployment scaled to zero, the ServiceAccount
// and the Service of appManifests, named after the release (no
// ConfigMap). It answers conditional GETs of the index (ETag). One
// HelmRepository in the run's namespace points at it; every HelmRelease
// app-N names the chart in spec.chart.spec (the controller makes a
// HelmChart for it next to the HelmRepository), with driftDetection.mode
// enabled and a two-minute timeout. With -namespaces per-app (the
// default) each HelmRelease, its release Secrets and its objects are in a
// namespace of its own, created (and given its default ServiceAccount by
// kube-controller-manager) before the measures; with -namespaces one they
// all share the run's namespace, where every install's wait watches the
// objects of every other release. The figures differ from the
// Kustomizations' as follows:
//
//   - ready_seconds: until every HelmRelease is Ready for its current
//     generation; the table's timelines are the HelmCharts' first
//     artifact, the first deployed release and Ready.
//   - change_to_applied_seconds: not measured (left out of the JSON).
//   - noop_tick_*: the HelmRepository and every HelmRelease get the
//     requestedAt token; downloads are "chart_gets", GETs of the package
//     answered with a body. The GETs of index.yaml answered with a body
//     (a 304 is not one) are how the HelmRepository checks for a change,
//     as a reference listing is for git: they are counted apart,
//     helm.noop_tick_index_gets, and not part of noop_tick_writes, which
//     adds to the downloads and artifact files the figures under "helm"
//     in the JSON:
//   - helm.release_secrets_before and _after: the Secrets labelled
//     owner=helm named sh.helm.release.v1.* in the namespaces, just before
//     and after the tick (N both times), and noop_tick_new_releases, those
//     after that were not before (0).
//   - helm.noop_tick_object_writes: the write requests (POST, PUT, PATCH,
//     APPLY, DELETE; not dry-run) the API server's apiserver_request_total
//     counted from just before the tick until its files were checked, to
//     anything but a status subresource, an Event or a Lease, less the
//     benchmark's own requestedAt patches (0). The status, Event and
//     dry-run writes are counted apart, and
//     noop_tick_controller_write_requests is the controller's own count
//     of its POST, PUT, PATCH and DELETE requests over the tick.
//
// How the figures are measured:
//
//   - ready_seconds: from the creation of the first object (the
//     sources, then the Kustomizations, 16 at a time) until a watch
//     sees every Kustomization Ready for its current generation.
//   - peak_rss_bytes: VmHWM from /proc/<pid>/status of the controller
//     process, read at the end of the run (so the peak over all phases).
//     VmHWM counts the pages of the binary mapped from the file that the
//     controller runs (about 50 MiB at N=1000; the binary is built as
//     `make image` builds it, without cgo), so the table also shows the
//     peak of RssAnon (heap and stacks) sampled every 100ms.
//   - cpu_seconds: utime+stime from /proc/<pid>/stat divided by the clock
//     tick (100), read when every Kustomization is Ready; it includes the
//     controller's start-up, which the table shows apart.
//   - api_requests: the sum of every rest_client_requests_total series
//     on the controller's /metrics, scraped when every Kustomization is
//     Ready (start-up requests included).
//   - change_to_applied_seconds: from just before the change to app 0's
//     ConfigMap (a commit; a new artifact pushed to app-0:latest; the
//     object app-0/app.yaml put again), through the
//     reconcile.fluxcd.io/requestedAt annotation on its source, until its
//     Kustomization is Ready with status.lastAppliedRevision at the new
//     commit, digest or bucket revision.
//   - noop_tick_seconds: every source and Kustomization is annotated
//     with a new requestedAt token (16 patches at a time); from the first
//     patch until every one echoes the token in
//     status.lastHandledReconcileAt (and every Kustomization is still
//     Ready).
//   - noop_tick_downloads: during the tick (and one second after), the
//     content the source server served, by what: git "fetches", POST
//     …/git-upload-pack requests counted by a reverse proxy in front of
//     the git server (reference listings, GET …/info/refs, are not
//     counted); OCI "manifest_gets" and "blob_gets", GET
//     /v2/<name>/manifests/<ref> and /v2/<name>/blobs/<digest> counted by
//     the registry's handler (HEAD requests, which resolve the tag, are
//     not); bucket "object_gets", GET /<bucket>/<key> counted by the proxy
//     (listings are not). Every count must be 0.
//   - noop_tick_writes: the downloads, plus the number of regular files
//     in the controller's --storage-path that were created or whose
//     modification time or size changed. It must be 0.
//
// With -alert, the run starts a loopback HTTP sink that records every
// event posted to it, and creates in its namespace, once the controller
// runs and before any application, an Alert (eventSeverity info) whose
// eventSources select every object (name '*') of every kind the run
// creates (the sources, the Kustomizations; with -kind helmrelease the
// HelmRepository, the HelmCharts and the HelmReleases, in their
// namespaces), then a generic Provider pointing at the sink; the run
// waits until the controller reports the Alert forwarding. The controller
// gets --rate-limit-interval from -alert-window (its default, 5m, when not
// given). The usual phases run as without -alert, so that their figures
// compare; the figures under "alert" in the JSON count the messages the
// sink received (messages, errors, info, resolved, and the events
// "folded" into them, "(and N more like it)"):
//
//   - phases: in the ready phase, the change, and the no-op tick.
//   - fetch_failure (git sources only): the branch is deleted on the git
//     server and the sources are asked to reconcile; once every one
//     reports Ready=False (the Kustomizations stay Ready on the last
//     artifact: kustomizations_ready_while_failing), the branch is put
//     back at the same commit and the run waits until every source is
//     Ready. failure_notifications counts the messages from the deletion
//     until the fix, recovery_notifications from the fix until the sink
//     has been quiet for 2s once every source was Ready; failed_seconds
//     and recovered_seconds time the two halves, and objects_warned counts
//     the objects with a Warning event (Kubernetes events) recorded
//     meanwhile: the failures handed to the dispatcher.
//   - broken_revision (git sources only): one commit per repository makes
//     every application's manifest invalid YAML; every Kustomization
//     fails to build it, with an error event of the same reason, the
//     flood the dispatcher folds. A second commit puts the manifests back;
//     the same figures.
//   - after_recovery: the messages that came after the last recovery,
//     until the folding window that began with the broken revision had
//     closed (a folded flood's message is sent then, for the failures
//     still held; none when every one recovered).
//   - total: every message of the run.
//
// With -image, the N applications are N image update pipelines, and
// the figures are under "image" in the JSON (source ImageRepository,
// layout monorepo). The benchmark fills an in-process OCI registry (the
// one of -source oci, its tag lists paged with a Link header as the
// distribution spec says) with N repositories app-N of -image-tags tags
// 1.0.0, 1.0.1… each: one small random image pushed once, then its
// manifest put again under every other tag (registry_setup_seconds). One
// git repository, served by git-http-backend (whatever -git-server says:
// the native server takes no push) with basic auth, holds
// apps/app-N/deploy.yaml, whose image names tag 1.0.0 with the setter
// marker of the ImagePolicy app-N. There is one GitRepository with the
// credentials, and for each application an ImageRepository (insecure,
// interval -image-interval), an ImagePolicy (semver >=1.0.0, labelled
// with its application) and an ImageUpdateAutomation (interval
// -image-automation-interval, update path ./apps/app-N, the policy
// selector of its label alone) that commits to main and pushes, racing
// the others. Every phase counts the registry's requests (tag list
// pages, scan passes: first pages; others), the git server's (fetches,
// reference listings, push attempts: receive-pack advertisements, and
// pushes sent), the commits added to main (git rev-list --count) and the
// API server's writes to the image kinds and the GitRepository (object,
// status, events); push_retries are the attempts that added no commit:
//
//   - ready: from the first creation until every ImagePolicy has a
//     latestRef (policies_elected_seconds) and every automation has
//     pushed (status.lastPushCommit) and is Ready; N commits and N scan
//     passes are expected (one more per repository for every interval
//     the phase lasts).
//   - ready_settle: until every automation is Ready at the head of main
//     (status.observedSourceRevision): one that pushed before the last
//     push clones again, at its interval, to learn the new head.
//   - change: the tag 1.1.0 is pushed to K = max(1, N/10) repositories
//     and their ImageRepositories asked to reconcile; until the K
//     automations pushed it (change_to_applied_seconds too): K commits.
//   - change_settle: as ready_settle.
//   - noop_tick: a window of 1.2 repository intervals (noop_tick_seconds):
//     every repository scans once or twice (1 or 2 scan passes per
//     repository: those created together scan together),
//     and nothing is committed, fetched or written (noop_tick_writes adds
//     the fetches, the files of the tag store written, the writes to the
//     image kinds and the commits: it must be 0).
//   - repositories_ready, policies_ready, automations_ready: the objects
//     Ready at the end (N each).
//
// peak_rss_bytes, cpu_seconds and api_requests are measured as for the
// Kustomizations. -image runs without -gate and -alert.
//
// With -gate, every Kustomization lists one Gate in spec.gates, created
// closed (window 1h) before them, and the ready phase has two parts; the
// figures are under "gate" in the JSON:
//
//   - held_seconds: from the creation of the first source until every
//     source has an artifact and every Kustomization reports
//     Approved=False, reason GateClosed.
//   - applied_while_held: the applications' objects found in the
//     namespace then, and again after the quiet window. It must be 0; the
//     run fails otherwise.
//   - held_api_requests_per_second: once the controller's request count
//     has stood still for a second (at most 15s), the increase of its
//     rest_client_requests_total over a quiet window of -gate-quiet (10s)
//     while every application is held, per second. Holding costs no
//     request per consumer, so it is near zero whatever N.
//   - held: the Kustomizations still held at the end of that window (N).
//   - open_to_ready_seconds and open_to_ready_quantiles: from just before
//     the patch that sets open.gate.fluxcd.io/requestedAt=<now> on the
//     gate until every Kustomization is Ready with its source's head
//     applied, and the 10%, 50%, 90% and 99% quantiles of those times.
//     ready_seconds and the table's applied and ready timelines count
//     from the opening too; the later phases run with the gate open.
//
// With -ui, the controller also serves its web UI (--ui-addr on a free
// loopback port, without sign-in: read-only, loopback hosts only) and its
// pprof profiles, and a phase follows the ready phase (the change phase
// and the no-op tick come after it); the figures are under "ui" in the
// JSON. It runs with Kustomizations, without -alert and -image. First it
// waits until the controller's request count has stood still for a second
// (at most 15s), then:
//
//   - overview_p50_seconds, overview_max_seconds, overview_bytes: GET /
//     once, then 20 times one after the other on a kept-alive
//     connection, each timed until its body is read; the median (the
//     10th of the 20) and the largest, the page's size, and
//     overview_cpu_seconds, the controller's utime+stime over the 20
//     requests divided by 20: what a request costs, however busy the
//     machine.
//   - graph_*: the same for GET /graph, unfiltered, and what it drew:
//     graph_nodes (the rows of its table of nodes), graph_edges (its
//     arrows), graph_appliers_shown (the Kustomizations drawn: 300 at
//     most) and graph_appliers_matched (those the page says match).
//   - change_to_page_seconds: the page of app 0's Kustomization is
//     fetched and its live stream opened with ?since= the count of
//     changes the page was rendered after, as the page's script does
//     (again, up to 20 times, while that count moves before the stream
//     starts); from just before a merge patch spec.suspend=true until the
//     stream delivers the "changed" event after which the page, fetched
//     again, shows the Kustomization Suspended;
//     change_to_page_rendered_seconds until that fetch ended. The
//     Kustomization is then resumed, and the run waits until it is Ready
//     for its new generation.
//   - open_pages_*: once the request count stands still again, a quiet
//     window of -ui-quiet (5s) with no page open, then 20 pages open
//     (each fetched the overview once, and follows its stream, fetching
//     the overview again at each "changed" event, as the script does) and
//     a second window of the same length; each window starts with a GET
//     of the controller's /debug/pprof/heap?gc=1, a collection (the run
//     gives the controller a -pprof-addr). no_pages_api_requests and
//     open_pages_api_requests are the increases of the controller's
//     rest_client_requests_total over the two windows: 0 when nothing
//     changes. open_pages_added_bytes is RssAnon at the end of the second
//     window less at the end of the first; open_pages_added_heap_bytes
//     the same for go_memstats_heap_inuse_bytes read after another
//     collection: the live heap the pages hold. open_pages_refreshes
//     counts the "changed" events the pages got in their window.
//
// With -profile, the -ui phase also writes windlass-ui.pprof: a CPU
// profile of the controller over -profile-seconds, taken after the timed
// requests, while the run fetches the overview and the graph in turn.
//
// Everything shares the machine's cores: the control plane, the source
// server, the benchmark and the controller. The table shows the CPU time
// of each process and the requests the API server served, by kind, so that
// a run says where its time went. The controller authenticates with a
// ServiceAccount token and the project's ClusterRole, as in a cluster. The
// git server answers upload-pack in process (-git-server native) unless
// -git-server http-backend asks for git-http-backend, whose git processes
// cost tens of milliseconds of CPU per clone.
//
// With -controllers reference, the run measures the reference toolkit's
// source-controller and kustomize-controller instead of windlass, with
// everything else the same: the control plane, Windlass's CRDs (they serve
// the same schemas), the git server, the workload and the phases. Their
// binaries are built by hack/reference.sh from the module in
// hack/reference (run by the benchmark when they are missing). They run
// as two child processes, as the same ServiceAccount (in $KUBECONFIG:
// they have no --kubeconfig flag), with every
// namespace watched, no leader election, errors-only logs and their own
// default --concurrent (-concurrent sets both), source-controller serving
// its artifacts on a loopback port that it advertises in the sources'
// status, where kustomize-controller downloads them. The figures are
// their sums: peak_rss_bytes is the largest sum of their VmRSS, sampled
// every 100ms (each one's VmHWM is under "reference" in the JSON),
// cpu_seconds and api_requests add up their utime+stime and
// rest_client_requests_total. The figures read from Windlass's own
// metrics (ready_requests, noop_tick_requests, metrics) are left out and
// named under reference.skipped (the metrics phase still runs, against
// source-controller's endpoint, and its log line is not a figure); the
// API server's requests by verb and resource are under
// reference.ready_server_requests and noop_tick_server_requests; the flags that measure Windlass alone
// (-kind helmrelease, -source oci or bucket, -gate, -alert, -image, -ui,
// -profile, -pprof-addr) are refused.
//
// With -replicas N (N > 1), N `windlass controller` processes share the
// objects (--shards=auto, --shard-by from -shard-by, object by default);
// the figures are their sums, "replicas" in the JSON splits them, and a
// failover phase follows: the replica that holds the most objects is
// killed, and failover_seconds times until the survivors' metrics show a
// run of every object it held (see replicas.go, replicas_failover.go);
// then the rejoin phase starts it again, and rejoin_seconds times until
// its metrics show a run of every object of its share back
// (replicas_rejoin.go).
//
// Start-up (building the binary, the control plane, the repositories) is
// not measured. The program needs the test control plane: run `make
// controlplane` first.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	var cfg Config
	var out string
	flag.IntVar(&cfg.N, "n", 100, "number of applications")
	flag.StringVar(&cfg.Kind, "kind", KindKustomization, "kind of the applications' objects: "+KindKustomization+" or "+KindHelmRelease+" (one HelmRepository, a HelmRelease per app)")
	flag.StringVar(&cfg.Source, "source", "", "kind of the sources: "+SourceGit+" (GitRepositories, the default), "+SourceOCI+" (an OCIRepository and an artifact per app, in-process registry) or "+SourceBucket+" (a Bucket per app, a prefix each of one versitygw bucket); "+SourceHelm+" (one chart repository, the default and only one) with -kind "+KindHelmRelease)
	flag.StringVar(&cfg.Layout, "layout", "", "source layout: "+LayoutRepoPerApp+" or "+LayoutMonorepo+" (default "+LayoutRepoPerApp+"; "+LayoutMonorepo+", the only one, with -kind "+KindHelmRelease+")")
	flag.StringVar(&cfg.Namespaces, "namespaces", "", "with -kind "+KindHelmRelease+": "+NamespacesPerApp+" (a namespace per HelmRelease, the default) or "+NamespacesOne+" (all in the run's namespace)")
	flag.IntVar(&cfg.Concurrent, "concurrent", 0, "passed to `windlass controller --concurrent`, or to both reference controllers' --concurrent (0: the default of each)")
	flag.StringVar(&cfg.GitServer, "git-server", GitServerNative, "loopback git server: "+GitServerNative+" (upload-pack in process) or "+GitServerHTTPBackend+" (git-http-backend, a process per request)")
	flag.StringVar(&cfg.PprofAddr, "pprof-addr", "", "passed to `windlass controller --pprof-addr`, to profile the run")
	flag.StringVar(&cfg.ProfileDir, "profile", "", "write CPU profiles of the controller and kube-apiserver, over the start of the ready phase (with -replicas: of the survivors and kube-apiserver, from the failover's kill on; with -controllers none: of kube-apiserver, from the first apply on), to this folder")
	flag.IntVar(&cfg.ProfileSeconds, "profile-seconds", 20, "length of the -profile profiles")
	flag.DurationVar(&cfg.ReadyTimeout, "timeout", 10*time.Minute, "bound of each phase's wait")
	flag.BoolVar(&cfg.KubeconfigViaEnv, "kubeconfig-via-env", false, "diagnostic: pass the kubeconfig in $KUBECONFIG rather than --kubeconfig")
	flag.BoolVar(&cfg.Generator, "generator", false, "with -layout "+LayoutMonorepo+": after its phases, split the same repository with one ArtifactGenerator (pathPattern, an ExternalArtifact and a Kustomization per application) and measure a commit to one application's folder against the plain layout's")
	flag.BoolVar(&cfg.Gate, "gate", false, "put every Kustomization behind one closed Gate: measure them held, the API requests while held, and the time from opening to all Ready")
	flag.DurationVar(&cfg.GateQuiet, "gate-quiet", defaultGateQuiet, "with -gate, the window over which the held phase's API requests are counted")
	flag.BoolVar(&cfg.Alert, "alert", false, "create a generic Provider posting to a loopback sink and an Alert (severity info) selecting every object of the run, count the messages by phase, and add a failure phase (git sources: a deleted branch, then a broken commit, each mended)")
	flag.DurationVar(&cfg.AlertWindow, "alert-window", 0, "with -alert, the controller's --rate-limit-interval, its dedup and folding window (default 5m)")
	flag.BoolVar(&cfg.Image, "image", false, "measure image update automation: N ImageRepositories (in-process registry), ImagePolicies and ImageUpdateAutomations pushing to one git repository (git-http-backend, whatever -git-server says)")
	flag.IntVar(&cfg.ImageTags, "image-tags", defaultImageTags, "with -image, the number of tags of every registry repository")
	flag.DurationVar(&cfg.ImageInterval, "image-interval", defaultImageInterval, "with -image, the ImageRepositories' interval; the no-op window is 1.2 of it")
	flag.DurationVar(&cfg.ImageAutomationInterval, "image-automation-interval", 0, "with -image, the ImageUpdateAutomations' interval (default: -image-interval)")
	flag.BoolVar(&cfg.UI, "ui", false, "serve the controller's web UI on loopback (--ui-addr) and measure it once every application is Ready: the overview and the graph, a change reaching an open page, and the API requests and memory of 20 open pages")
	flag.DurationVar(&cfg.UIQuiet, "ui-quiet", defaultUIQuiet, "with -ui, the length of each quiet window (no page open, then 20 open)")
	flag.StringVar(&cfg.Controllers, "controllers", ControllersWindlass, "what to measure: "+ControllersWindlass+" (windlass controller) or "+ControllersReference+" (the reference source-controller and kustomize-controller, built by hack/reference.sh; git sources and Kustomizations only) or "+ControllersNone+" (no controller: the benchmark applies the applications' objects itself and waits until every Deployment is Current, the floor that the control plane sets)")
	flag.IntVar(&cfg.Replicas, "replicas", 1, "number of `windlass controller` processes; above 1 they share the objects (--shards=auto, --shard-name r<i>), a failover phase kills the one holding the most objects, and a rejoin phase starts it again")
	flag.StringVar(&cfg.ShardBy, "shard-by", "", "with -replicas above 1, the replicas' --shard-by: object (the default: the Kustomizations share one namespace) or namespace")
	flag.DurationVar(&cfg.ShardLeaseDuration, "shard-lease-duration", 0, "with -replicas above 1, the replicas' --shard-lease-duration (default 15s, the controller's)")
	flag.StringVar(&out, "out", "", "write the figures as JSON to this file")
	flag.Parse()
	cfg.Log = os.Stderr
	// The benchmark's own clients have nothing to log; without a logger,
	// controller-runtime prints a stack trace at the first client.
	ctrllog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, nil, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if cfg.Controllers == ControllersNone {
		printFloor(os.Stdout, res)
	} else {
		printTable(os.Stdout, res)
	}
	if out != "" {
		if err := writeJSON(out, res); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// writeJSON writes res to path as indented JSON.
func writeJSON(path string, res *Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// printTable writes the figures of res, and the details that are not part
// of the JSON, as an aligned table.
func printTable(w io.Writer, res *Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	d := res.Details
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("n", fmt.Sprint(res.N))
	if res.Helm != nil {
		row("kind", "HelmRelease, namespaces "+res.Helm.Namespaces)
	}
	row("source", res.Source)
	row("layout", res.Layout)
	// With -gate, the Kustomizations' figures count from the opening.
	readyLabel, since := "ready_seconds", ""
	if res.Gate != nil {
		readyLabel, since = "ready_seconds (from the gate's opening)", " the gate's opening"
	}
	row(readyLabel, fmt.Sprintf("%.2f", res.ReadySeconds))
	for _, t := range []struct {
		what string
		q    []float64
	}{{"source ready after", d.SourceQuantiles}, {"applied after" + since, d.AppliedQuantiles}, {"ready after" + since, d.ReadyQuantiles}} {
		if len(t.q) == 4 {
			row("  "+t.what+" (10% 50% 90% 99%)", fmt.Sprintf("%.1fs %.1fs %.1fs %.1fs", t.q[0], t.q[1], t.q[2], t.q[3]))
		}
	}
	if res.Gate != nil {
		for _, r := range gateRows(res.Gate) {
			row(r[0], r[1])
		}
	}
	row("peak_rss_bytes", fmt.Sprintf("%d (%.1f MiB)", res.PeakRSSBytes, float64(res.PeakRSSBytes)/(1<<20)))
	row("  peak anonymous RSS (sampled)", fmt.Sprintf("%.1f MiB", float64(d.PeakRSSAnonBytes)/(1<<20)))
	row("cpu_seconds", fmt.Sprintf("%.2f (%.2f of them at start-up)", res.CPUSeconds, d.StartupCPUSeconds))
	row("api_requests", fmt.Sprint(res.APIRequests))
	if b := res.ReadyRequests; b != nil {
		row("  requests per application, ready", fmt.Sprintf("%.2f: %s", b.PerApp, formatBudget(b.ByKind)))
		row("    by request", formatBudget(b.ByRequest))
	}
	if res.Helm == nil {
		row("change_to_applied_seconds", fmt.Sprintf("%.2f", res.ChangeToAppliedSeconds))
		if st := res.ChangeSteps; st != nil {
			row("  in the source server, artifact after", fmt.Sprintf("%.2fs, %.2fs", st.ChangedSeconds, st.ArtifactSeconds))
		}
		if cc := res.ChangeCost; cc != nil {
			row("  change API requests, CPU seconds", fmt.Sprintf("%d, %.2f", cc.Requests, cc.CPUSeconds))
		}
	}
	row("noop_tick_seconds", fmt.Sprintf("%.2f", res.NoopTickSeconds))
	row("noop_tick_downloads", formatCounts(res.NoopTickDownloads))
	if b := res.NoopTickRequests; b != nil {
		row("noop_tick_requests_per_object", fmt.Sprintf("%.2f (%.2f per application: %s)", res.NoopTickRequestsPerObject, b.PerApp, formatBudget(b.ByKind)))
		row("    by request", formatBudget(b.ByRequest))
	}
	if h := res.Helm; h != nil {
		row("noop_tick_writes", fmt.Sprintf("%d (%d downloads, %d artifact files, %d object writes, %d new releases)",
			res.NoopTickWrites, d.NoopDownloads, d.NoopFiles, h.NoopTickObjectWrites, h.NoopTickNewReleases))
		for _, r := range helmRows(h) {
			row(r[0], r[1])
		}
	} else if im := res.Image; im != nil {
		row("noop_tick_writes", fmt.Sprintf("%d (%d downloads, %d tag store files, %d image object writes, %d image status writes, %d commits)",
			res.NoopTickWrites, d.NoopDownloads, d.NoopFiles, im.Noop.ImageObjectWrites, im.Noop.ImageStatusWrites, im.Noop.Commits))
		for _, r := range imageRows(im, res.N) {
			row(r[0], r[1])
		}
	} else {
		row("noop_tick_writes", fmt.Sprintf("%d (%d downloads, %d artifact files)", res.NoopTickWrites, d.NoopDownloads, d.NoopFiles))
	}
	if res.Generator != nil {
		for _, r := range generatorRows(res.Generator, res.ChangeCost) {
			row(r[0], r[1])
		}
	}
	if res.Alert != nil {
		for _, r := range alertRows(res.Alert) {
			row(r[0], r[1])
		}
	}
	if res.Metrics != nil {
		for _, r := range metricsRows(res.Metrics) {
			row(r[0], r[1])
		}
	}
	if res.Replicas != nil {
		for _, r := range replicasRows(res.Replicas) {
			row(r[0], r[1])
		}
	}
	if res.UI != nil {
		for _, r := range uiRows(res.UI) {
			row(r[0], r[1])
		}
	}
	if res.Reference != nil {
		for _, r := range referenceRows(res.Reference) {
			row(r[0], r[1])
		}
	}
	if res.Reference == nil {
		row("  concurrent", fmt.Sprint(d.Concurrent))
	}
	row("  source server", d.SourceServer)
	if d.KubeconfigViaEnv {
		row("  kubeconfig", "in $KUBECONFIG (diagnostic), not --kubeconfig")
	}
	row("  set-up seconds (not measured)", fmt.Sprintf("%.1f", d.SetupSeconds))
	row("  downloads in the ready phase", formatCounts(d.ReadyDownloads))
	row("  no-op tick CPU seconds", fmt.Sprintf("%.2f", d.NoopCPUSeconds))
	var reqs []string
	for _, m := range slices.Sorted(maps.Keys(d.NoopAPIRequests)) {
		reqs = append(reqs, fmt.Sprintf("%s=%d", m, d.NoopAPIRequests[m]))
	}
	row("  no-op tick API requests", strings.Join(reqs, " "))
	row("  CPU seconds by process, ready phase", formatCPU(d.ReadyCPU))
	row("  CPU seconds by process, no-op tick", formatCPU(d.NoopCPU))
	row("  API server requests, ready phase", strings.Join(firstN(d.ReadyServerRequests, 12), " "))
	row("  API server requests, no-op tick", strings.Join(firstN(d.NoopServerRequests, 12), " "))
	if len(d.NoopWrittenFiles) > 0 {
		row("  no-op tick files written", strings.Join(d.NoopWrittenFiles, " "))
	}
	tw.Flush()
}

// printFloor writes the figures of a -controllers none run.
func printFloor(w io.Writer, res *Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("n", fmt.Sprint(res.N))
	row("controllers", "none: the benchmark applies every object once, then waits until every Deployment is Current")
	row("ready_seconds", fmt.Sprintf("%.2f", res.ReadySeconds))
	row("  concurrent", fmt.Sprint(res.Details.Concurrent))
	row("  CPU seconds by process", formatCPU(res.Details.ReadyCPU))
	row("  API server requests", strings.Join(firstN(res.Details.ReadyServerRequests, 12), " "))
	tw.Flush()
}

// formatCPU lists CPU seconds by process, largest first.
func formatCPU(cpu map[string]float64) string {
	names := slices.SortedFunc(maps.Keys(cpu), func(a, b string) int {
		if cpu[a] != cpu[b] {
			if cpu[a] > cpu[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%.1f", n, cpu[n]))
	}
	return strings.Join(parts, " ")
}

// formatCounts lists counts by name, sorted: "blob_gets=0 manifest_gets=0".
func formatCounts(counts map[string]int64) string {
	parts := make([]string, 0, len(counts))
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return orNone(strings.Join(parts, " "))
}

// firstN returns the first n elements of s at most.
func firstN(s []string, n int) []string {
	return s[:min(n, len(s))]
}
