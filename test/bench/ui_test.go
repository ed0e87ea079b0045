package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// smokeUIQuiet is the length of the quiet windows of the smoke test's -ui
// run.
const smokeUIQuiet = 2 * time.Second

// smokeUI runs the benchmark with -ui, smokeN applications in one
// repository, on cl, and checks that every figure of the web UI is there
// and sane: the pages timed, the graph of every application, the change
// told to the open page, and 20 open pages that cost the API server no
// request while nothing changes. It does not check the bounds:
// the benchmark run at 1,000 applications measures those.
func smokeUI(t *testing.T, cl *Cluster) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, cl, Config{N: smokeN, Layout: LayoutMonorepo, UI: true, UIQuiet: smokeUIQuiet,
		ReadyTimeout: 90 * time.Second, Log: t.Output(), Cleanup: true})
	g.Expect(err).NotTo(HaveOccurred())
	printTable(t.Output(), res)

	u := res.UI
	g.Expect(u).NotTo(BeNil())
	g.Expect(u.Requests).To(Equal(uiRequests))
	for _, p := range [][2]float64{{u.OverviewP50Seconds, u.OverviewMaxSeconds}, {u.GraphP50Seconds, u.GraphMaxSeconds}} {
		g.Expect(p[0]).To(BeNumerically(">", 0))
		g.Expect(p[0]).To(BeNumerically("<=", p[1]))
	}
	g.Expect(u.OverviewBytes).To(BeNumerically(">", 1000))
	// The controller's CPU time counts in ticks of 10ms: a small page's
	// 20 requests may take fewer.
	g.Expect(u.OverviewCPUSeconds).To(BeNumerically(">=", 0))
	g.Expect(u.GraphCPUSeconds).To(BeNumerically(">=", 0))
	g.Expect(u.GraphBytes).To(BeNumerically(">", 1000))
	// One GitRepository, and each Kustomization with its objects counted
	// in one node.
	g.Expect(u.GraphAppliersShown).To(Equal(smokeN))
	g.Expect(u.GraphAppliersMatched).To(Equal(smokeN))
	g.Expect(u.GraphNodes).To(BeNumerically(">=", 2*smokeN+1))
	g.Expect(u.GraphEdges).To(BeNumerically(">=", 2*smokeN))

	g.Expect(u.ChangeToPageSeconds).To(BeNumerically(">", 0))
	g.Expect(u.ChangeRenderedSeconds).To(BeNumerically(">=", u.ChangeToPageSeconds))
	g.Expect(u.RestoredSeconds).To(BeNumerically(">", 0))
	g.Expect(res.ChangeToAppliedSeconds).To(BeNumerically(">", 0), "the change phase runs after the UI's")

	g.Expect(u.OpenPages).To(Equal(uiOpenPages))
	g.Expect(u.QuietSeconds).To(BeNumerically(">=", smokeUIQuiet.Seconds()))
	g.Expect(u.NoPages.Seconds).To(BeNumerically(">=", smokeUIQuiet.Seconds()))
	g.Expect(u.OpenPagesAPIRequests).To(BeZero(), "requests with the pages open: %v", u.Open.ByMethod)
	g.Expect(u.OpenPagesRefreshes).To(BeZero(), "nothing changed, no page was told to refresh")
	g.Expect(u.OpenPagesAddedHeapBytes).NotTo(BeNil(), "the controller's metrics expose go_memstats_heap_inuse_bytes")
	g.Expect(u.NoPages.HeapInuseBytes).To(BeNumerically(">", 0))
	g.Expect(u.Open.RSSAnonBytes).To(BeNumerically(">", 0))

	data, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	var got map[string]any
	g.Expect(json.Unmarshal(data, &got)).To(Succeed())
	g.Expect(got).To(HaveKeyWithValue("ui", And(
		HaveKeyWithValue("overview_p50_seconds", BeNumerically(">", 0)),
		HaveKeyWithValue("overview_max_seconds", BeNumerically(">", 0)),
		HaveKeyWithValue("graph_p50_seconds", BeNumerically(">", 0)),
		HaveKeyWithValue("change_to_page_seconds", BeNumerically(">", 0)),
		HaveKeyWithValue("open_pages_api_requests", BeNumerically("==", 0)),
		HaveKey("overview_cpu_seconds"), HaveKey("graph_cpu_seconds"),
		HaveKey("open_pages_added_bytes"), HaveKey("open_pages_added_heap_bytes"), HaveLen(22))))
}

func TestUIConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"kustomizations", Config{N: 1, UI: true}, ""},
		{"gated", Config{N: 1, UI: true, Gate: true}, ""},
		{"helmrelease", Config{N: 1, UI: true, Kind: KindHelmRelease}, "-ui measures the pages of Kustomizations"},
		{"alert", Config{N: 1, UI: true, Alert: true}, "-ui does not run with -alert"},
		{"image", Config{N: 1, UI: true, Image: true}, "-ui does not run with -image"},
		{"negative quiet", Config{N: 1, UI: true, UIQuiet: -time.Second}, "-ui-quiet must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := tc.cfg.withDefaults()
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

func TestGraphFigures(t *testing.T) {
	g := NewWithT(t)
	page := []byte(`<p id="graph-more" class="graph-note">1000 applications match: the graph shows the first 300. Filter.</p>
<path class="edge" d="M0 0" marker-end="url(#graph-arrow)"><title>x</title></path>
<path class="edge" d="M0 1" marker-end="url(#graph-arrow)"><title>y</title></path>
<table><thead><tr><th>Node</th></tr></thead><tbody>
<tr><td><a href="/object/GitRepository/bench-1/monorepo">GitRepository</a></td></tr>
<tr><td><a href="/object/Kustomization/bench-1/app-0">Kustomization</a></td></tr>
<tr><td><a href="/object/Kustomization/bench-1/app-0#inventory">4 objects</a></td></tr>
<tr><td><a href="/object/HelmRelease/bench-1/app-1">HelmRelease</a></td></tr>
<tr><td>Deployment bench-1/app-2</td></tr>
</tbody></table>`)
	nodes, edges, shown, matched := graphFigures(page)
	g.Expect([]int{nodes, edges, shown, matched}).To(Equal([]int{5, 2, 2, 1000}))
	// Without the note, every applier matching is drawn.
	_, _, shown, matched = graphFigures(page[strings.Index(string(page), "\n"):])
	g.Expect([]int{shown, matched}).To(Equal([]int{2, 2}))
}

func TestPageParts(t *testing.T) {
	g := NewWithT(t)
	since, err := changesOf([]byte(`<html><body data-changes="42"><main>`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(since).To(Equal("42"))
	_, err = changesOf([]byte(`<html><body><main>`))
	g.Expect(err).To(HaveOccurred())
	g.Expect(suspendedPage([]byte(`<span id="state" class="state state-Suspended">Suspended</span>`))).To(BeTrue())
	g.Expect(suspendedPage([]byte(`<span id="state" class="state state-Ready">Ready</span>`))).To(BeFalse())

	v, ok := metricValue([]byte(`# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes_other 1
go_memstats_heap_inuse_bytes 1.2345e+07
`), "go_memstats_heap_inuse_bytes")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(1.2345e7))
	_, ok = metricValue([]byte("go_goroutines 12\n"), "go_memstats_heap_inuse_bytes")
	g.Expect(ok).To(BeFalse())
}

// fakeUI serves pages whose count of changes is counts[i] at the i-th
// GET (the last one after), and live streams that send "changed" at each
// change, recording the since each was told.
type fakeUI struct {
	counts []string
	gets   atomic.Int32
	since  chan string

	mu      sync.Mutex
	streams map[chan struct{}]bool
}

// change tells every open stream that an object changed.
func (f *fakeUI) change() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.streams {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (f *fakeUI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/events" {
		i := min(int(f.gets.Add(1))-1, len(f.counts)-1)
		fmt.Fprintf(w, `<html><body data-changes="%s"><main><span id="state" class="state state-Ready">Ready</span></main>`, f.counts[i])
		return
	}
	changed := make(chan struct{}, 1)
	f.mu.Lock()
	f.streams[changed] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.streams, changed)
		f.mu.Unlock()
	}()
	f.since <- r.URL.Query().Get("since")
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, ": live\n\n")
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-changed:
			fmt.Fprint(w, "event: changed\ndata: \n\n")
			w.(http.Flusher).Flush()
		}
	}
}

// TestPageStreams opens a page's stream while the count of changes moves
// (it is opened again), then an open page that refreshes at each change.
func TestPageStreams(t *testing.T) {
	g := NewWithT(t)
	f := &fakeUI{counts: []string{"1", "2", "3", "3"}, since: make(chan string, 10), streams: map[chan struct{}]bool{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	u := newUIClient(strings.TrimPrefix(srv.URL, "http://"))
	defer u.close()
	ctx := context.Background()

	arrived := make(chan time.Time, 1)
	s, err := openQuietStream(ctx, u, "/object/Kustomization/ns/app-0", func(at time.Time) { arrived <- at })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]string{<-f.since, <-f.since}).To(Equal([]string{"1", "3"}), "opened again once the count stood still")
	g.Expect(f.gets.Load()).To(BeNumerically("==", 4))
	f.change()
	g.Expect(<-arrived).To(BeTemporally("~", time.Now(), time.Second))
	s.close()
	g.Expect(s.ended()).To(BeTrue())

	var refreshes atomic.Int64
	p, err := openPage(ctx, u, "/", &refreshes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(<-f.since).To(Equal("3"))
	f.change()
	g.Eventually(refreshes.Load).Should(Equal(int64(1)))
	g.Eventually(f.gets.Load).Should(BeNumerically("==", 6), "the page was fetched again")
	g.Expect(p.ended()).To(BeFalse())
	p.close()
}

func TestUIRows(t *testing.T) {
	g := NewWithT(t)
	heap := int64(3 << 20)
	rows := uiRows(&UIResult{Requests: 20, OverviewP50Seconds: 0.0421, OverviewMaxSeconds: 0.09, OverviewBytes: 123456, OverviewCPUSeconds: 0.02,
		GraphP50Seconds: 0.1, GraphMaxSeconds: 0.15, GraphBytes: 700000, GraphNodes: 901, GraphEdges: 800,
		GraphAppliersShown: 300, GraphAppliersMatched: 1000, ChangeToPageSeconds: 0.25, ChangeRenderedSeconds: 0.3,
		RestoredSeconds: 0.5, OpenPages: 20, QuietSeconds: 5, OpenPagesAddedBytes: -1 << 20, OpenPagesAddedHeapBytes: &heap,
		Open: UIWindow{ByMethod: map[string]int64{}}})
	g.Expect(rows[0]).To(Equal([2]string{"ui overview (GET /)", "p50 42.1ms max 90.0ms, CPU 20.0ms a request, 123.5 kB (20 requests after a warm-up)"}))
	g.Expect(rows[1][1]).To(Equal("p50 100.0ms max 150.0ms, CPU 0.0ms a request, 700.0 kB: 901 nodes, 800 edges, 300 of 1000 applications drawn"))
	g.Expect(rows[2][1]).To(Equal("0.250 (fetched again 0.300; 0 changes before it; Ready again 0.50s after the resume)"))
	g.Expect(rows[3][1]).To(Equal("20 open for 5.0s: 0 API requests (0 with none open), -1.0 MiB anonymous RSS, +3.0 MiB live heap, 0 refreshes"))
	g.Expect(rows[4][1]).To(Equal("none"))
}
