package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// smokeN is the number of applications of the smoke test, as the
// benchmark issue asks: small enough for `go test ./...` on two cores.
const smokeN = 20

// smokeGateN is the number of applications of the smoke test's -gate run.
const smokeGateN = 5

// TestSmoke runs the benchmark with smokeN applications in both git
// layouts and from OCI artifacts and a bucket, with smokeGateN behind a
// gate (git and bucket), and with smokeN HelmReleases, on one control
// plane, and checks that every application becomes Ready, that the no-op
// tick downloads and writes nothing, that the JSON file holds every
// figure, and that the gate held every application without applying
// anything, cheaply; then an -alert run, an -image run (see smokeImage),
// a -ui run (see smokeUI) and a run on two replicas (see smokeReplicas).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and the controller")
	}
	cl, err := StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop(t.Output())
	for _, tc := range []struct {
		name, source, layout string
		n                    int
		gate                 bool
		// kind and downloads are the source kind and the download counts
		// the run reports.
		kind      string
		downloads []string
	}{
		{LayoutRepoPerApp, SourceGit, LayoutRepoPerApp, smokeN, false, "GitRepository", []string{gitFetches}},
		{LayoutMonorepo, SourceGit, LayoutMonorepo, smokeN, false, "GitRepository", []string{gitFetches}},
		{"gate", SourceGit, LayoutMonorepo, smokeGateN, true, "GitRepository", []string{gitFetches}},
		{SourceOCI, SourceOCI, LayoutRepoPerApp, smokeN, false, "OCIRepository", []string{blobGets, manifestGets}},
		{SourceBucket, SourceBucket, LayoutRepoPerApp, smokeN, false, "Bucket", []string{objectGets}},
		{"gate-bucket", SourceBucket, LayoutRepoPerApp, smokeGateN, true, "Bucket", []string{objectGets}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, cl, Config{
				N:            tc.n,
				Source:       tc.source,
				Layout:       tc.layout,
				Gate:         tc.gate,
				GateQuiet:    3 * time.Second,
				ReadyTimeout: 90 * time.Second,
				Log:          t.Output(),
				Cleanup:      true,
			})
			g.Expect(err).NotTo(HaveOccurred())
			printTable(t.Output(), res)

			// Run returns only once every Kustomization is Ready; check
			// the figures that prove it.
			g.Expect(res.N).To(Equal(tc.n))
			g.Expect(res.ReadySeconds).To(BeNumerically(">", 0))
			g.Expect(res.ChangeToAppliedSeconds).To(BeNumerically(">", 0))
			g.Expect(res.ChangeSteps).NotTo(BeNil())
			g.Expect(res.ChangeSteps.ChangedSeconds).To(BeNumerically("<=", res.ChangeSteps.ArtifactSeconds))
			g.Expect(res.NoopTickSeconds).To(BeNumerically(">", 0))
			g.Expect(res.APIRequests).To(BeNumerically(">", 0))
			g.Expect(res.Source).To(Equal(tc.kind))
			g.Expect(slices.Sorted(maps.Keys(res.Details.ReadyDownloads))).To(Equal(tc.downloads))
			g.Expect(sum(res.Details.ReadyDownloads)).To(BeNumerically(">", 0), "the server counted no download: %v", res.Details.ReadyDownloads)
			g.Expect(res.Details.SourceQuantiles).To(HaveLen(4), "the timeline of the sources")
			g.Expect(res.Details.ReadyQuantiles).To(HaveLen(4), "the timeline of the Kustomizations")
			g.Expect(res.Details.ReadyQuantiles[3]).To(BeNumerically("<=", res.ReadySeconds))
			g.Expect(res.NoopTickWrites).To(BeZero(), "files written by the no-op tick: %v", res.Details.NoopWrittenFiles)
			g.Expect(slices.Sorted(maps.Keys(res.NoopTickDownloads))).To(Equal(tc.downloads))
			g.Expect(sum(res.NoopTickDownloads)).To(BeZero(), "downloads of the no-op tick: %v", res.NoopTickDownloads)
			g.Expect(res.Metrics).NotTo(BeNil(), "the metrics endpoint is timed")
			g.Expect(res.Metrics.Series).To(BeNumerically(">=", 2*tc.n), "a gotk_resource_info series per source and Kustomization, at least")
			g.Expect(res.Metrics.P50Seconds).To(BeNumerically(">", 0))

			out := filepath.Join(t.TempDir(), "result.json")
			g.Expect(writeJSON(out, res)).To(Succeed())
			data, err := os.ReadFile(out)
			g.Expect(err).NotTo(HaveOccurred())
			var got map[string]any
			g.Expect(json.Unmarshal(data, &got)).To(Succeed())
			keys := 17
			g.Expect(res.ReadyRequests).NotTo(BeNil())
			g.Expect(res.ReadyRequests.ByKind).To(HaveKeyWithValue("Kustomization", BeNumerically(">", 0)))
			g.Expect(res.ReadyRequests.ByKind).To(HaveKeyWithValue(tc.kind, BeNumerically(">", 0)))
			g.Expect(res.ReadyRequests.ByRequest).To(HaveKey("patch kustomizations/status"))
			g.Expect(res.NoopTickRequestsPerObject).To(BeNumerically(">", 0))
			if tc.gate {
				keys++
				checkGate(t, res, got)
			} else {
				g.Expect(res.Gate).To(BeNil())
			}
			g.Expect(got).To(HaveLen(keys))
			g.Expect(got).To(HaveKeyWithValue("n", BeNumerically("==", tc.n)))
			g.Expect(got).To(HaveKeyWithValue("layout", tc.layout))
			g.Expect(got).To(HaveKeyWithValue("source", tc.kind))
			g.Expect(got).To(HaveKeyWithValue("noop_tick_downloads", HaveLen(len(tc.downloads))))
			g.Expect(got).To(HaveKeyWithValue("change_steps", HaveKey("artifact_seconds")))
			g.Expect(got).To(HaveKeyWithValue("change_cost", HaveKeyWithValue("requests", BeNumerically(">", 0))))
			for _, key := range []string{"ready_seconds", "peak_rss_bytes", "cpu_seconds", "api_requests",
				"change_to_applied_seconds", "noop_tick_seconds", "noop_tick_writes"} {
				g.Expect(got).To(HaveKeyWithValue(key, BeNumerically(">=", 0)))
			}
			if _, err := os.Stat("/proc/self/status"); err == nil {
				g.Expect(res.PeakRSSBytes).To(BeNumerically(">", 0))
				g.Expect(res.CPUSeconds).To(BeNumerically(">", 0))
			}
		})
	}
	for _, ns := range []string{NamespacesPerApp, NamespacesOne} {
		t.Run(KindHelmRelease+"-"+ns, func(t *testing.T) { smokeHelm(t, cl, ns) })
	}
	t.Run("alert", func(t *testing.T) { smokeAlert(t, cl) })
	t.Run("image", func(t *testing.T) { smokeImage(t, cl) })
	t.Run("ui", func(t *testing.T) { smokeUI(t, cl) })
	t.Run("replicas", func(t *testing.T) { smokeReplicas(t, cl) })
}

// smokeHelm runs the benchmark with smokeN HelmReleases on cl, in
// namespaces ns, and checks that every one becomes Ready from one chart,
// and that the no-op tick installs, downloads and writes nothing: as many
// release Secrets after it as before, one per release.
func smokeHelm(t *testing.T, cl *Cluster, ns string) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, cl, Config{N: smokeN, Kind: KindHelmRelease, Namespaces: ns, ReadyTimeout: 2 * time.Minute,
		Log: t.Output(), Cleanup: true})
	g.Expect(err).NotTo(HaveOccurred())
	printTable(t.Output(), res)

	g.Expect(res.Source).To(Equal("HelmRepository"))
	g.Expect(res.ReadySeconds).To(BeNumerically(">", 0))
	g.Expect(res.NoopTickSeconds).To(BeNumerically(">", 0))
	g.Expect(res.Details.SourceQuantiles).To(HaveLen(4), "the timeline of the HelmCharts")
	g.Expect(res.Details.AppliedQuantiles).To(HaveLen(4), "the timeline of the releases")
	g.Expect(res.Details.ReadyQuantiles).To(HaveLen(4), "the timeline of the HelmReleases")
	g.Expect(res.Details.ReadyDownloads).To(HaveKeyWithValue(chartGets, BeNumerically(">", 0)))
	h := res.Helm
	g.Expect(h).NotTo(BeNil())
	g.Expect(h.ReadyIndexGets).To(BeNumerically(">", 0), "the HelmRepository fetched no index")
	g.Expect(h.ReleaseSecretsBefore).To(Equal(smokeN), "one release Secret per HelmRelease")
	g.Expect(h.ReleaseSecretsAfter).To(Equal(smokeN))
	g.Expect(h.NoopTickNewReleases).To(BeZero(), "releases made by the no-op tick: %v", h.NewReleaseNames)
	g.Expect(h.NoopTickObjectWrites).To(BeZero(), "objects written by the no-op tick: %v", h.ObjectWrites)
	// Each HelmRelease and the HelmRepository records the handled request.
	g.Expect(h.NoopTickStatusWrites).To(BeNumerically(">=", smokeN+1))
	g.Expect(res.NoopTickDownloads).To(Equal(map[string]int64{chartGets: 0}))
	g.Expect(res.NoopTickWrites).To(BeZero(), "files written by the no-op tick: %v", res.Details.NoopWrittenFiles)

	data, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	var got map[string]any
	g.Expect(json.Unmarshal(data, &got)).To(Succeed())
	g.Expect(got).NotTo(HaveKey("change_to_applied_seconds"), "a helmrelease run has no change phase")
	g.Expect(got).To(HaveKeyWithValue("layout", LayoutMonorepo))
	g.Expect(got).To(HaveKeyWithValue("helm", And(
		HaveKeyWithValue("release_secrets_before", BeNumerically("==", smokeN)),
		HaveKeyWithValue("noop_tick_object_writes", BeNumerically("==", 0)),
		HaveKeyWithValue("namespaces", ns), HaveKey("noop_tick_index_gets"), HaveLen(10))))
}

// checkGate checks the figures of a -gate run, and their JSON form in got.
func checkGate(t *testing.T, res *Result, got map[string]any) {
	g := NewWithT(t)
	gr := res.Gate
	g.Expect(gr).NotTo(BeNil())
	g.Expect(gr.Held).To(Equal(res.N), "Kustomizations held by the closed gate")
	g.Expect(gr.AppliedWhileHeld).To(BeZero(), "objects applied behind the closed gate")
	g.Expect(gr.AppliedAfterOpen).To(Equal(appObjects*res.N), "the object count sees the applied objects")
	g.Expect(gr.HeldSeconds).To(BeNumerically(">", 0))
	g.Expect(gr.QuietSeconds).To(BeNumerically(">=", 3))
	// Holding costs no request per consumer while nothing changes.
	g.Expect(gr.HeldAPIRequests).To(BeNumerically("<", res.N), "requests while held: %v", gr.HeldAPIRequestsByMethod)
	g.Expect(gr.OpenToReadySeconds).To(BeNumerically(">", 0))
	g.Expect(gr.OpenToReadySeconds).To(Equal(res.ReadySeconds))
	g.Expect(gr.GateOpenedSeconds).To(BeNumerically(">", 0))
	g.Expect(gr.GateOpenedSeconds).To(BeNumerically("<", gr.OpenToReadySeconds))
	q := gr.OpenToReady
	g.Expect([]float64{q.P10, q.P50, q.P90, q.P99}).To(Equal(res.Details.ReadyQuantiles))
	g.Expect(q.P10).To(BeNumerically(">", 0))
	g.Expect(q.P99).To(BeNumerically("<=", gr.OpenToReadySeconds))

	g.Expect(got).To(HaveKey("gate"))
	gate, ok := got["gate"].(map[string]any)
	g.Expect(ok).To(BeTrue(), "gate is an object: %v", got["gate"])
	g.Expect(gate).To(HaveLen(8))
	g.Expect(gate).To(HaveKeyWithValue("held", BeNumerically("==", res.N)))
	g.Expect(gate).To(HaveKeyWithValue("applied_while_held", BeNumerically("==", 0)))
	for _, key := range []string{"held_seconds", "held_quiet_seconds", "open_to_ready_seconds"} {
		g.Expect(gate).To(HaveKeyWithValue(key, BeNumerically(">", 0)))
	}
	for _, key := range []string{"held_api_requests", "held_api_requests_per_second"} {
		g.Expect(gate).To(HaveKeyWithValue(key, BeNumerically(">=", 0)))
	}
	g.Expect(gate).To(HaveKeyWithValue("open_to_ready_quantiles", HaveLen(4)))
}

// TestSumRESTRequests checks the parsing of the Prometheus exposition.
func TestSumRESTRequests(t *testing.T) {
	g := NewWithT(t)
	total, byMethod, err := sumRESTRequests(stringsReader(`# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:1",method="PATCH"} 3
rest_client_requests_total{code="409",host="127.0.0.1:1",method="PATCH"} 1
rest_client_requests_total_other 99
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(total).To(Equal(int64(16)))
	g.Expect(byMethod).To(Equal(map[string]int64{"GET": 12, "PATCH": 4}))
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func TestServerRequests(t *testing.T) {
	g := NewWithT(t)
	before := parseServerRequests([]byte(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 5
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 2
`))
	after := parseServerRequests([]byte(`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kustomize.toolkit.fluxcd.io",resource="kustomizations",scope="resource",subresource="status",verb="PATCH",version="v1"} 9
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 4
apiserver_request_total_other 99
`))
	g.Expect(requestDelta(before, after)).To(Equal([]string{"PATCH kustomizations/status=9", "GET configmaps=3"}))
}

func TestQuantiles(t *testing.T) {
	g := NewWithT(t)
	var ds []time.Duration
	for i := 10; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	g.Expect(quantiles(ds, 0.1, 0.5, 0.9, 1)).To(Equal([]float64{1, 5, 9, 10}))
	g.Expect(quantiles(nil, 0.5)).To(BeNil())
}

func TestGateRows(t *testing.T) {
	g := NewWithT(t)
	g.Expect(quantilesOf([]float64{1, 2, 3, 4})).To(Equal(Quantiles{P10: 1, P50: 2, P90: 3, P99: 4}))
	g.Expect(quantilesOf(nil)).To(Equal(Quantiles{}))
	rows := gateRows(&GateResult{
		Held: 100, HeldSeconds: 1.5, OpenToReadySeconds: 5.25, OpenToReady: Quantiles{P10: 1, P50: 2.5, P90: 4, P99: 5},
		HeldAPIRequests: 1, QuietSeconds: 10, HeldAPIRequestsPerSecond: 0.1, SettleSeconds: 1,
		HeldAPIRequestsByMethod: map[string]int64{"PATCH": 1}, AppliedAfterOpen: 400,
	})
	g.Expect(rows[0]).To(Equal([2]string{"gate",
		"held 100 in 1.50s, opened → all Ready in 5.25s (p10 1.00s p50 2.50s p90 4.00s p99 5.00s), held-phase API requests/s 0.10"}))
	g.Expect(rows[1][1]).To(Equal("0 objects (400 once Ready)"))
	g.Expect(rows[2][1]).To(Equal("1 in 10.0s (after 1.0s settling) PATCH=1"))
	g.Expect(rows[3][1]).To(Equal("none"))
}

func TestClassifyDownloads(t *testing.T) {
	for _, tc := range []struct {
		name, method, target string
		// registry and object are what classifyRegistryGet and
		// countObjectGet say of the request.
		registry, object string
	}{
		{"manifest GET", http.MethodGet, "/v2/app-0/manifests/latest", manifestGets, objectGets},
		{"manifest HEAD", http.MethodHead, "/v2/app-0/manifests/latest", "", ""},
		{"blob GET", http.MethodGet, "/v2/app-0/blobs/sha256:abc", blobGets, objectGets},
		{"blob upload", http.MethodGet, "/v2/app-0/blobs/uploads/123", "", objectGets},
		{"tag list", http.MethodGet, "/v2/app-0/tags/list", "", objectGets},
		{"registry ping", http.MethodGet, "/v2/", "", ""},
		{"object GET", http.MethodGet, "/bench/app-0/app.yaml", "", objectGets},
		{"object HEAD", http.MethodHead, "/bench/app-0/app.yaml", "", ""},
		{"bucket listing", http.MethodGet, "/bench/?list-type=2&prefix=app-0%2F", "", ""},
		{"bucket listing without slash", http.MethodGet, "/bench?location=", "", ""},
		{"object PUT", http.MethodPut, "/bench/app-0/app.yaml", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := httptest.NewRequest(tc.method, tc.target, nil)
			g.Expect(classifyRegistryGet(r)).To(Equal(tc.registry))
			g.Expect(countObjectGet(r)).To(Equal(tc.object))
		})
	}
}

func TestCountingProxyKeepsHost(t *testing.T) {
	g := NewWithT(t)
	hosts := make(chan string, 2)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		_, _ = io.WriteString(w, "ok")
	}))
	defer backend.Close()
	p, err := startCountingProxy(backend.URL, countObjectGet, objectGets)
	g.Expect(err).NotTo(HaveOccurred())
	defer p.Close()
	g.Expect(p.Counts()).To(Equal(map[string]int64{objectGets: 0}))
	for _, target := range []string{"/bench/app-0/app.yaml", "/bench/?list-type=2"} {
		resp, err := http.Get(p.URL + target)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		// SigV4 signs the Host header: the backend must see the proxy's.
		g.Expect(<-hosts).To(Equal(p.Host()))
	}
	g.Expect(p.Counts()).To(Equal(map[string]int64{objectGets: 1}))
}

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		// kind, source and layout are what the defaults make of them;
		// err the error.
		kind, source, layout, err string
	}{
		{"git by default", Config{N: 1}, KindKustomization, SourceGit, LayoutRepoPerApp, ""},
		{"oci", Config{N: 1, Source: SourceOCI}, KindKustomization, SourceOCI, LayoutRepoPerApp, ""},
		{"unknown source", Config{N: 1, Source: "svn"}, "", "", "", `unknown source "svn"`},
		{"bucket monorepo", Config{N: 1, Source: SourceBucket, Layout: LayoutMonorepo}, "", "", "", "layout monorepo needs -source git"},
		{"no app", Config{Source: SourceOCI}, "", "", "", "n must be at least 1"},
		{"helmrelease", Config{N: 1, Kind: KindHelmRelease}, KindHelmRelease, SourceHelm, LayoutMonorepo, ""},
		{"helmrelease from oci", Config{N: 1, Kind: KindHelmRelease, Source: SourceOCI}, "", "", "", `-source helm, not "oci"`},
		{"helmrelease per app", Config{N: 1, Kind: KindHelmRelease, Layout: LayoutRepoPerApp}, "", "", "", `-layout monorepo, not "repo-per-app"`},
		{"helmrelease gated", Config{N: 1, Kind: KindHelmRelease, Gate: true}, "", "", "", "-gate measures Kustomizations only"},
		{"helm source of Kustomizations", Config{N: 1, Source: SourceHelm}, "", "", "", "source helm needs -kind helmrelease"},
		{"alert window without alert", Config{N: 1, AlertWindow: time.Minute}, "", "", "", "-alert-window needs -alert"},
		{"negative alert window", Config{N: 1, Alert: true, AlertWindow: -time.Minute}, "", "", "", "must not be negative"},
		{"unknown kind", Config{N: 1, Kind: "deployment"}, "", "", "", `unknown kind "deployment"`},
		{"namespaces of Kustomizations", Config{N: 1, Namespaces: NamespacesOne}, "", "", "", "-namespaces places HelmReleases"},
		{"unknown namespaces", Config{N: 1, Kind: KindHelmRelease, Namespaces: "two"}, "", "", "", `unknown namespaces "two"`},
		{"generator", Config{N: 1, Layout: LayoutMonorepo, Generator: true}, KindKustomization, SourceGit, LayoutMonorepo, ""},
		{"generator per app", Config{N: 1, Generator: true}, "", "", "", "-generator splits a monorepo"},
		{"generator gated", Config{N: 1, Layout: LayoutMonorepo, Generator: true, Gate: true}, "", "", "", "-generator runs alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := tc.cfg.withDefaults()
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Kind).To(Equal(tc.kind))
			g.Expect(cfg.Source).To(Equal(tc.source))
			g.Expect(cfg.Layout).To(Equal(tc.layout))
			if cfg.Kind == KindHelmRelease {
				g.Expect(cfg.Namespaces).To(Equal(NamespacesPerApp))
			} else {
				g.Expect(cfg.Namespaces).To(BeEmpty())
			}
			g.Expect(cfg.Log).NotTo(BeNil())
			g.Expect(cfg.AlertWindow).To(Equal(defaultAlertWindow))
		})
	}
}
