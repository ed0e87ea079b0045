package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// smokeN is the number of applications of the smoke test, as the
// benchmark issue asks: small enough for `go test ./...` on two cores.
const smokeN = 20

// TestSmoke runs the benchmark with smokeN applications in both layouts,
// on one control plane, and checks that every application becomes Ready,
// that the no-op tick clones and writes nothing, and that the JSON file
// holds every figure.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and the controller")
	}
	cl, err := StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop(t.Output())
	for _, layout := range []string{LayoutRepoPerApp, LayoutMonorepo} {
		t.Run(layout, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, cl, Config{
				N:            smokeN,
				Layout:       layout,
				ReadyTimeout: 90 * time.Second,
				Log:          t.Output(),
				Cleanup:      true,
			})
			g.Expect(err).NotTo(HaveOccurred())
			printTable(t.Output(), res)

			// Run returns only once every Kustomization is Ready; check
			// the figures that prove it.
			g.Expect(res.N).To(Equal(smokeN))
			g.Expect(res.ReadySeconds).To(BeNumerically(">", 0))
			g.Expect(res.ChangeToAppliedSeconds).To(BeNumerically(">", 0))
			g.Expect(res.NoopTickSeconds).To(BeNumerically(">", 0))
			g.Expect(res.APIRequests).To(BeNumerically(">", 0))
			g.Expect(res.Details.ReadyClones).To(BeNumerically(">", 0), "the clone counter saw no fetch")
			g.Expect(res.Details.SourceQuantiles).To(HaveLen(4), "the timeline of the sources")
			g.Expect(res.Details.ReadyQuantiles).To(HaveLen(4), "the timeline of the Kustomizations")
			g.Expect(res.Details.ReadyQuantiles[3]).To(BeNumerically("<=", res.ReadySeconds))
			g.Expect(res.NoopTickWrites).To(BeZero(), "files written by the no-op tick: %v", res.Details.NoopWrittenFiles)

			out := filepath.Join(t.TempDir(), "result.json")
			g.Expect(writeJSON(out, res)).To(Succeed())
			data, err := os.ReadFile(out)
			g.Expect(err).NotTo(HaveOccurred())
			var got map[string]any
			g.Expect(json.Unmarshal(data, &got)).To(Succeed())
			g.Expect(got).To(HaveLen(9))
			g.Expect(got).To(HaveKeyWithValue("n", BeNumerically("==", smokeN)))
			g.Expect(got).To(HaveKeyWithValue("layout", layout))
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

func TestParseStat(t *testing.T) {
	g := NewWithT(t)
	name, fields, ok := parseStat([]byte("4242 (kube-controller) S 1 2 3 4 5 6 7 8 9 10 110 22 33 44\n"))
	g.Expect(ok).To(BeTrue())
	g.Expect(name).To(Equal("kube-controller"))
	g.Expect(fields[0]).To(Equal("S"))
	g.Expect(seconds(fields[11:13])).To(BeNumerically("~", 1.32, 1e-9))
	_, _, ok = parseStat([]byte("garbage"))
	g.Expect(ok).To(BeFalse())
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
