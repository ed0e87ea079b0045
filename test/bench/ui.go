package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
)

// The measures of a -ui run.
const (
	// uiRequests is how many timed requests each page gets, after one
	// warm-up.
	uiRequests = 20
	// uiOpenPages is how many pages stay open, following the UI live.
	uiOpenPages = 20
	// defaultUIQuiet is the length of each quiet window when
	// Config.UIQuiet is zero.
	defaultUIQuiet = 5 * time.Second
	// uiQuietTries bounds the attempts to open the change's page at a
	// moment when no object changes.
	uiQuietTries = 20
)

// UIResult holds the figures of a -ui run: the controller's web UI
// (--ui-addr, loopback, no sign-in) measured once every application is
// Ready.
type UIResult struct {
	// Requests is the number of timed requests of each page, after one
	// warm-up, one at a time on a kept-alive connection.
	Requests int `json:"requests"`
	// OverviewP50Seconds and OverviewMaxSeconds are the median and the
	// largest time of GET / (until its body is read); OverviewBytes is
	// the page's size.
	OverviewP50Seconds float64 `json:"overview_p50_seconds"`
	OverviewMaxSeconds float64 `json:"overview_max_seconds"`
	OverviewBytes      int     `json:"overview_bytes"`
	// OverviewCPUSeconds is the controller's CPU time (utime+stime) over
	// the timed requests of the overview, per request: what a request
	// costs whatever else the machine runs.
	OverviewCPUSeconds float64 `json:"overview_cpu_seconds"`
	// GraphP50Seconds, GraphMaxSeconds, GraphBytes and GraphCPUSeconds
	// are the same for GET /graph, unfiltered.
	GraphP50Seconds float64 `json:"graph_p50_seconds"`
	GraphMaxSeconds float64 `json:"graph_max_seconds"`
	GraphBytes      int     `json:"graph_bytes"`
	GraphCPUSeconds float64 `json:"graph_cpu_seconds"`
	// GraphNodes and GraphEdges count what the graph drew: the rows of
	// its table of nodes and the arrows of its drawing.
	GraphNodes int `json:"graph_nodes"`
	GraphEdges int `json:"graph_edges"`
	// GraphAppliersShown counts the Kustomizations and HelmReleases the
	// graph drew, and GraphAppliersMatched those that match its (empty)
	// filter: the page draws at most 300.
	GraphAppliersShown   int `json:"graph_appliers_shown"`
	GraphAppliersMatched int `json:"graph_appliers_matched"`
	// ChangeToPageSeconds runs from the request that suspends app 0's
	// Kustomization until the live stream (/events) of its open page
	// delivers the "changed" event after which the page, fetched again,
	// shows it Suspended.
	ChangeToPageSeconds float64 `json:"change_to_page_seconds"`
	// ChangeRenderedSeconds runs from the same request until that page
	// was fetched again, as the page's script does on the event.
	ChangeRenderedSeconds float64 `json:"change_to_page_rendered_seconds"`
	// OpenPages is the number of pages open in the second window: each
	// fetched the overview once and follows its stream.
	OpenPages int `json:"open_pages"`
	// QuietSeconds is the length of each window.
	QuietSeconds float64 `json:"open_pages_quiet_seconds"`
	// NoPagesAPIRequests is the increase of the controller's
	// rest_client_requests_total over a window with no page open;
	// OpenPagesAPIRequests over the window with OpenPages open. Nothing
	// changes in either: both must be 0.
	NoPagesAPIRequests   int64 `json:"no_pages_api_requests"`
	OpenPagesAPIRequests int64 `json:"open_pages_api_requests"`
	// OpenPagesAddedBytes is the controller's anonymous resident memory
	// (RssAnon) at the end of the window with the pages open, less that
	// at the end of the window without; each window starts with a
	// collection.
	OpenPagesAddedBytes int64 `json:"open_pages_added_bytes"`
	// OpenPagesAddedHeapBytes is the same for go_memstats_heap_inuse_bytes
	// read after a collection (a heap profile with gc=1): the live heap
	// the pages hold. Nil when the metrics do not expose it.
	OpenPagesAddedHeapBytes *int64 `json:"open_pages_added_heap_bytes,omitempty"`
	// OpenPagesRefreshes counts the "changed" events the open pages got
	// during their window (each then fetched the overview again): 0 when
	// nothing changes.
	OpenPagesRefreshes int64 `json:"open_pages_refreshes"`

	// SettleSeconds is the wait, before the pages were timed, until the
	// controller's request count stood still for a second.
	SettleSeconds float64 `json:"-"`
	// EarlierChanges counts the "changed" events the change's page got
	// before the one that carried the change.
	EarlierChanges int `json:"-"`
	// RestoredSeconds runs from the request that resumes app 0 until its
	// Kustomization is Ready again.
	RestoredSeconds float64 `json:"-"`
	// NoPages and Open are the two windows.
	NoPages, Open UIWindow `json:"-"`
}

// UIWindow is what a quiet window of a -ui run measured.
type UIWindow struct {
	// Seconds is its length.
	Seconds float64
	// APIRequests is the increase of the controller's
	// rest_client_requests_total, ByMethod the same by HTTP method (the
	// methods with requests only).
	APIRequests int64
	ByMethod    map[string]int64
	// ServerRequests are the requests the API server served, every
	// client's, largest count first.
	ServerRequests []string
	// RSSAnonBytes is the controller's RssAnon at the end, and
	// HeapInuseBytes its go_memstats_heap_inuse_bytes after a collection
	// (HeapMeasured says whether the metrics expose it).
	RSSAnonBytes, HeapInuseBytes int64
	HeapMeasured                 bool
}

// uiPhase measures the web UI once every application is Ready: the
// overview and the graph, a change reaching an open page, and what 20
// open pages cost the API server and the controller's memory.
func (r *run) uiPhase(ctx context.Context, res *Result) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	u := newUIClient(r.uiAddr)
	defer u.close()
	if err := r.ctrl.WaitHTTP(ctx, u.base+"/", time.Minute); err != nil {
		return r.withOutput(fmt.Errorf("waiting for the web UI: %w", err))
	}
	ur := &UIResult{Requests: uiRequests, OpenPages: uiOpenPages}
	settled, err := r.ctrl.waitRequestsStill(ctx, settleBound)
	if err != nil {
		return err
	}
	ur.SettleSeconds = settled.Seconds()
	if err := r.uiPages(ctx, u, ur); err != nil {
		return err
	}
	if err := r.profileUI(ctx, u); err != nil {
		return err
	}
	if err := r.uiChange(ctx, u, ur); err != nil {
		return r.withOutput(err)
	}
	if err := r.uiOpenPages(ctx, u, ur); err != nil {
		return r.withOutput(err)
	}
	res.UI = ur
	return nil
}

// uiPages times the overview and the graph.
func (r *run) uiPages(ctx context.Context, u *uiClient, ur *UIResult) error {
	cpu := func() (float64, error) {
		st, err := r.ctrl.stats()
		return st.CPUSeconds, err
	}
	ov, err := timePage(ctx, u, "/", ur.Requests, cpu)
	if err != nil {
		return err
	}
	ur.OverviewP50Seconds, ur.OverviewMaxSeconds, ur.OverviewBytes, ur.OverviewCPUSeconds = ov.p50, ov.max, len(ov.body), ov.cpu
	gr, err := timePage(ctx, u, "/graph", ur.Requests, cpu)
	if err != nil {
		return err
	}
	ur.GraphP50Seconds, ur.GraphMaxSeconds, ur.GraphBytes, ur.GraphCPUSeconds = gr.p50, gr.max, len(gr.body), gr.cpu
	ur.GraphNodes, ur.GraphEdges, ur.GraphAppliersShown, ur.GraphAppliersMatched = graphFigures(gr.body)
	r.logf("ui: overview p50 %.1fms max %.1fms CPU %.1fms (%d bytes); graph p50 %.1fms max %.1fms CPU %.1fms (%d bytes, %d of %d applications)",
		1000*ur.OverviewP50Seconds, 1000*ur.OverviewMaxSeconds, 1000*ur.OverviewCPUSeconds, ur.OverviewBytes,
		1000*ur.GraphP50Seconds, 1000*ur.GraphMaxSeconds, 1000*ur.GraphCPUSeconds, ur.GraphBytes,
		ur.GraphAppliersShown, ur.GraphAppliersMatched)
	return nil
}

// profileUI writes, with -profile, a CPU profile of the controller over
// -profile-seconds while the overview and the graph are fetched in turn:
// windlass-ui.pprof.
func (r *run) profileUI(ctx context.Context, u *uiClient) error {
	if r.cfg.ProfileDir == "" {
		return nil
	}
	secs := max(r.cfg.ProfileSeconds, 1)
	if err := os.MkdirAll(r.cfg.ProfileDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(r.cfg.ProfileDir, "windlass-ui.pprof")
	done := make(chan error, 1)
	go func() {
		hc := &http.Client{Timeout: time.Duration(secs+30) * time.Second}
		done <- fetchTo(ctx, hc, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", r.cfg.PprofAddr, secs), path)
	}()
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("profiling the web UI: %w", err)
			}
			r.logf("wrote %s", path)
			return nil
		default:
		}
		if _, err := u.get(ctx, []string{"/", "/graph"}[i%2]); err != nil {
			<-done
			return err
		}
	}
}

// pageTiming is what timePage measured: the median and largest time, in
// seconds, the server's CPU seconds per request, and the last body.
type pageTiming struct {
	p50, max, cpu float64
	body          []byte
}

// timePage gets path once, then n times, timing each until its body is
// read; cpu reads the server's CPU seconds.
func timePage(ctx context.Context, u *uiClient, path string, n int, cpu func() (float64, error)) (pageTiming, error) {
	if _, err := u.get(ctx, path); err != nil {
		return pageTiming{}, err
	}
	ds := make([]time.Duration, 0, n)
	var body []byte
	cpu0, err := cpu()
	if err != nil {
		return pageTiming{}, err
	}
	for range n {
		start := time.Now()
		b, err := u.get(ctx, path)
		if err != nil {
			return pageTiming{}, err
		}
		ds = append(ds, time.Since(start))
		body = b
	}
	cpu1, err := cpu()
	if err != nil {
		return pageTiming{}, err
	}
	q := quantiles(ds, 0.5, 1)
	return pageTiming{p50: q[0], max: q[1], cpu: (cpu1 - cpu0) / float64(n), body: body}, nil
}

// uiChange opens the page of app 0's Kustomization and its stream, as a
// browser does, suspends the Kustomization and measures until the stream
// tells the page, then resumes it.
func (r *run) uiChange(ctx context.Context, u *uiClient, ur *UIResult) error {
	path := "/object/" + kustomizev1.KustomizationKind + "/" + r.ns + "/" + appName(0)
	arrived := make(chan time.Time, 64)
	s, err := openQuietStream(ctx, u, path, func(at time.Time) {
		select {
		case arrived <- at:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer s.close()
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: appName(0)}}
	start := time.Now()
	if err := r.c.Patch(ctx, ks, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
		return fmt.Errorf("suspending %s: %w", appName(0), err)
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the open page to be told of the suspension: %w", ctx.Err())
		case <-s.done:
			return fmt.Errorf("the open page's stream ended before the change: %w", s.err)
		case at := <-arrived:
			if at.Before(start) {
				ur.EarlierChanges++ // written before the request
				continue
			}
			page, err := u.get(ctx, path)
			if err != nil {
				return err
			}
			if !suspendedPage(page) {
				ur.EarlierChanges++
				continue
			}
			ur.ChangeToPageSeconds, ur.ChangeRenderedSeconds = at.Sub(start).Seconds(), time.Since(start).Seconds()
			r.logf("ui: the suspension reached the open page in %.3fs (fetched again: %.3fs)", ur.ChangeToPageSeconds, ur.ChangeRenderedSeconds)
			return r.uiResume(ctx, ks, ur)
		}
	}
}

// uiResume resumes the Kustomization ks and waits until it is Ready for
// its new generation.
func (r *run) uiResume(ctx context.Context, ks *kustomizev1.Kustomization, ur *UIResult) error {
	start := time.Now()
	if err := r.c.Patch(ctx, ks, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":null}}`))); err != nil {
		return fmt.Errorf("resuming %s: %w", ks.Name, err)
	}
	resumed := func(obj client.Object) bool { return !obj.(*kustomizev1.Kustomization).Spec.Suspend && ksReady(obj) }
	if err := waitAll(ctx, r.c, r.ns, &kustomizev1.KustomizationList{}, 1, resumed, describeKs,
		client.MatchingFields{"metadata.name": ks.Name}); err != nil {
		return fmt.Errorf("waiting for %s to be Ready once resumed: %w", ks.Name, err)
	}
	ur.RestoredSeconds = time.Since(start).Seconds()
	return nil
}

// openQuietStream gets the page at path and opens its stream, told the
// count of changes the page was rendered after, and tries again (at most
// uiQuietTries times) while an object changed before the stream started:
// a change made after is then one the stream tells. The page must not
// show its object Suspended.
func openQuietStream(ctx context.Context, u *uiClient, path string, changed func(time.Time)) (*pageStream, error) {
	for try := 1; ; try++ {
		page, err := u.get(ctx, path)
		if err != nil {
			return nil, err
		}
		if suspendedPage(page) {
			return nil, fmt.Errorf("GET %s shows the object Suspended before the change", path)
		}
		since, err := changesOf(page)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		s, err := u.openStream(ctx, since, changed)
		if err != nil {
			return nil, err
		}
		again, err := u.get(ctx, path)
		if err != nil {
			s.close()
			return nil, err
		}
		if now, err := changesOf(again); (err == nil && now == since) || try == uiQuietTries {
			return s, nil
		}
		s.close()
	}
}

// uiOpenPages counts the controller's API requests and measures its
// memory over a quiet window with no page open, then over one with
// uiOpenPages pages open, each of which fetched the overview and follows
// its stream.
func (r *run) uiOpenPages(ctx context.Context, u *uiClient, ur *UIResult) error {
	quiet := r.cfg.UIQuiet
	if quiet <= 0 {
		quiet = defaultUIQuiet
	}
	// The resumed Kustomization's requests (status, events) end first.
	if _, err := r.ctrl.waitRequestsStill(ctx, settleBound); err != nil {
		return err
	}
	var err error
	if ur.NoPages, err = r.uiWindow(ctx, quiet); err != nil {
		return err
	}
	var refreshes atomic.Int64
	pages := make([]*pageStream, 0, ur.OpenPages)
	defer func() {
		for _, p := range pages {
			p.close()
		}
	}()
	for range ur.OpenPages {
		p, err := openPage(ctx, u, "/", &refreshes)
		if err != nil {
			return err
		}
		pages = append(pages, p)
	}
	refreshed := refreshes.Load()
	if ur.Open, err = r.uiWindow(ctx, quiet); err != nil {
		return err
	}
	for i, p := range pages {
		if p.ended() {
			return fmt.Errorf("the stream of open page %d ended during the window: %v", i, p.err)
		}
	}
	ur.recordWindows(refreshes.Load() - refreshed)
	r.logf("ui: %d open pages: %d API requests in %.1fs (%d with none), %+.1f MiB anonymous RSS", ur.OpenPages,
		ur.OpenPagesAPIRequests, ur.QuietSeconds, ur.NoPagesAPIRequests, float64(ur.OpenPagesAddedBytes)/(1<<20))
	return nil
}

// recordWindows fills in the figures of the two windows from NoPages and
// Open; refreshes is the count of the open pages' refreshes.
func (ur *UIResult) recordWindows(refreshes int64) {
	ur.QuietSeconds = ur.Open.Seconds
	ur.NoPagesAPIRequests, ur.OpenPagesAPIRequests = ur.NoPages.APIRequests, ur.Open.APIRequests
	ur.OpenPagesAddedBytes = ur.Open.RSSAnonBytes - ur.NoPages.RSSAnonBytes
	if ur.NoPages.HeapMeasured && ur.Open.HeapMeasured {
		d := ur.Open.HeapInuseBytes - ur.NoPages.HeapInuseBytes
		ur.OpenPagesAddedHeapBytes = &d
	}
	ur.OpenPagesRefreshes = refreshes
}

// openPage gets the page at path and opens its stream; on each "changed"
// event the page is fetched again, as its script does, and refreshes
// counts it.
func openPage(ctx context.Context, u *uiClient, path string, refreshes *atomic.Int64) (*pageStream, error) {
	page, err := u.get(ctx, path)
	if err != nil {
		return nil, err
	}
	since, err := changesOf(page)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return u.openStream(ctx, since, func(time.Time) {
		refreshes.Add(1)
		_, _ = u.get(ctx, path)
	})
}

// uiWindow measures a quiet window of length d: the controller's API
// requests during it and the API server's, and the controller's memory at
// its end. The window starts with a collection, so that the garbage of
// what came before (the pages fetched) is neither counted nor released
// during it.
func (r *run) uiWindow(ctx context.Context, d time.Duration) (UIWindow, error) {
	var w UIWindow
	if r.cfg.PprofAddr != "" {
		if err := collectGarbage(ctx, r.cfg.PprofAddr); err != nil {
			return w, fmt.Errorf("collecting the controller's garbage: %w", err)
		}
	}
	total0, byMethod0, err := r.ctrl.apiRequests()
	if err != nil {
		return w, err
	}
	served0 := serverRequestsOrNil(ctx, r.restCfg)
	start := time.Now()
	if err := sleep(ctx, d); err != nil { // the window is the measure
		return w, err
	}
	total1, byMethod1, err := r.ctrl.apiRequests()
	if err != nil {
		return w, err
	}
	w.Seconds = time.Since(start).Seconds()
	w.APIRequests = total1 - total0
	w.ByMethod = map[string]int64{}
	for m, v := range countsDelta(byMethod0, byMethod1) {
		if v != 0 {
			w.ByMethod[m] = v
		}
	}
	w.ServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, r.restCfg))
	st, err := r.ctrl.stats()
	if err != nil {
		return w, err
	}
	w.RSSAnonBytes = st.RSSAnonBytes
	w.HeapInuseBytes, w.HeapMeasured, err = r.liveHeap(ctx)
	return w, err
}

// liveHeap has the controller collect its garbage (a heap profile with
// gc=1 from its pprof server) and returns its go_memstats_heap_inuse_bytes,
// and whether its metrics expose it.
func (r *run) liveHeap(ctx context.Context) (int64, bool, error) {
	if r.cfg.PprofAddr != "" {
		if err := collectGarbage(ctx, r.cfg.PprofAddr); err != nil {
			return 0, false, fmt.Errorf("collecting the controller's garbage: %w", err)
		}
	}
	body, err := r.ctrl.metrics()
	if err != nil {
		return 0, false, err
	}
	v, ok := metricValue(body, "go_memstats_heap_inuse_bytes")
	return int64(v), ok, nil
}

// collectGarbage gets a heap profile with gc=1 from the pprof server at
// addr: the process collects its garbage first.
func collectGarbage(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	return err
}

// metricValue returns the value of the first sample of the metric name in
// a Prometheus text exposition, and whether there is one.
func metricValue(body []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(rest)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			return v, true
		}
	}
	return 0, false
}

// Patterns of the pages.
var (
	// changesPattern is the count of changes a page was rendered after.
	changesPattern = regexp.MustCompile(`<body data-changes="(\d+)"`)
	// graphMorePattern is the graph's note when it draws only the first
	// appliers.
	graphMorePattern = regexp.MustCompile(`(\d+) applications match: the graph shows the first (\d+)`)
	// graphApplierPattern is a row of the graph's table of nodes that
	// links to an applier's page (not to its inventory).
	graphApplierPattern = regexp.MustCompile(`<tr><td><a href="/object/(?:Kustomization|HelmRelease)/[^"#]*">`)
)

// changesOf returns the count of changes a page was rendered after.
func changesOf(page []byte) (string, error) {
	m := changesPattern.FindSubmatch(page)
	if m == nil {
		return "", errors.New("the page does not say how many changes it was rendered after (no live updates?)")
	}
	return string(m[1]), nil
}

// suspendedPage reports whether an object's page shows it Suspended.
func suspendedPage(page []byte) bool {
	return bytes.Contains(page, []byte(`class="state state-Suspended"`))
}

// graphFigures counts what a graph page drew: its nodes (the rows of its
// table), its edges (the arrows), the appliers drawn, and those that
// match (more than those drawn when the page says so).
func graphFigures(page []byte) (nodes, edges, shown, matched int) {
	nodes = bytes.Count(page, []byte("<tr><td>"))
	edges = bytes.Count(page, []byte("marker-end="))
	shown = len(graphApplierPattern.FindAllIndex(page, -1))
	matched = shown
	if m := graphMorePattern.FindSubmatch(page); m != nil {
		matched, _ = strconv.Atoi(string(m[1]))
	}
	return nodes, edges, shown, matched
}

// uiClient gets the pages of the UI at one address, as a browser on the
// same machine does (a loopback Host, which a UI without sign-in
// requires).
type uiClient struct {
	base string
	tr   *http.Transport
	hc   *http.Client
}

// newUIClient returns a uiClient of the UI at addr (host:port).
func newUIClient(addr string) *uiClient {
	tr := &http.Transport{MaxIdleConnsPerHost: uiOpenPages + 4}
	return &uiClient{base: "http://" + addr, tr: tr, hc: &http.Client{Transport: tr}}
}

// close closes the idle connections.
func (u *uiClient) close() { u.tr.CloseIdleConnections() }

// get returns the body of GET path, which must answer 200.
func (u *uiClient) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/html")
	resp, err := u.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		line, _, _ := strings.Cut(string(body), "\n")
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, line)
	}
	return body, nil
}

// pageStream is the live updates' stream (/events) of one open page.
type pageStream struct {
	stop context.CancelFunc
	// done is closed when reading ends, and err then says why.
	done chan struct{}
	err  error
}

// openStream opens GET /events?since=since and returns once the server
// has subscribed it (its ": live" comment). changed is called, from the
// stream's reader, at each "changed" event, with the time it arrived.
func (u *uiClient) openStream(ctx context.Context, since string, changed func(time.Time)) (*pageStream, error) {
	ctx, stop := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+"/events?since="+since, nil)
	if err != nil {
		stop()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := u.hc.Do(req)
	if err != nil {
		stop()
		return nil, err
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); resp.StatusCode != http.StatusOK || err != nil || line != ": live\n" {
		resp.Body.Close()
		stop()
		return nil, fmt.Errorf("GET /events: %s, %q, %v", resp.Status, line, err)
	}
	s := &pageStream{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		s.err = readEvents(br, changed)
	}()
	return s, nil
}

// readEvents reads server-sent events from br until it ends, calling
// changed at each "changed" event.
func readEvents(br *bufio.Reader, changed func(time.Time)) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSuffix(line, "\n") == "event: changed" {
			changed(time.Now())
		}
	}
}

// ended reports whether the stream has ended.
func (s *pageStream) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// close ends the stream and waits for its reader.
func (s *pageStream) close() {
	s.stop()
	<-s.done
}

// uiRows returns the table rows of a -ui run.
func uiRows(u *UIResult) [][2]string {
	ms := func(s float64) string { return fmt.Sprintf("%.1fms", 1000*s) }
	kb := func(n int) string { return fmt.Sprintf("%.1f kB", float64(n)/1000) }
	mib := func(n int64) string { return fmt.Sprintf("%+.1f MiB", float64(n)/(1<<20)) }
	heap := "not exposed"
	if u.OpenPagesAddedHeapBytes != nil {
		heap = mib(*u.OpenPagesAddedHeapBytes)
	}
	return [][2]string{
		{"ui overview (GET /)", fmt.Sprintf("p50 %s max %s, CPU %s a request, %s (%d requests after a warm-up)",
			ms(u.OverviewP50Seconds), ms(u.OverviewMaxSeconds), ms(u.OverviewCPUSeconds), kb(u.OverviewBytes), u.Requests)},
		{"ui graph (GET /graph)", fmt.Sprintf("p50 %s max %s, CPU %s a request, %s: %d nodes, %d edges, %d of %d applications drawn",
			ms(u.GraphP50Seconds), ms(u.GraphMaxSeconds), ms(u.GraphCPUSeconds), kb(u.GraphBytes), u.GraphNodes, u.GraphEdges,
			u.GraphAppliersShown, u.GraphAppliersMatched)},
		{"ui change_to_page_seconds", fmt.Sprintf("%.3f (fetched again %.3f; %d changes before it; Ready again %.2fs after the resume)",
			u.ChangeToPageSeconds, u.ChangeRenderedSeconds, u.EarlierChanges, u.RestoredSeconds)},
		{"ui open pages", fmt.Sprintf("%d open for %.1fs: %d API requests (%d with none open), %s anonymous RSS, %s live heap, %d refreshes",
			u.OpenPages, u.QuietSeconds, u.OpenPagesAPIRequests, u.NoPagesAPIRequests, mib(u.OpenPagesAddedBytes), heap,
			u.OpenPagesRefreshes)},
		{"  controller requests, open pages", formatCounts(u.Open.ByMethod)},
		{"  API server requests, open pages", orNone(strings.Join(firstN(u.Open.ServerRequests, 12), " "))},
		{"  memory, none open → open", fmt.Sprintf("RssAnon %.1f → %.1f MiB, live heap %.1f → %.1f MiB",
			float64(u.NoPages.RSSAnonBytes)/(1<<20), float64(u.Open.RSSAnonBytes)/(1<<20),
			float64(u.NoPages.HeapInuseBytes)/(1<<20), float64(u.Open.HeapInuseBytes)/(1<<20))},
		{"  settled before the pages", fmt.Sprintf("%.1fs", u.SettleSeconds)},
	}
}
