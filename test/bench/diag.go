package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/client-go/rest"
)

// The diagnostics below say where a phase's time went, on a machine whose
// cores the controller shares with the control plane: the CPU time of every
// process of the run, and the requests the API server served, by kind. They
// are printed in the table, not part of the JSON.

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat:
// 100 on every Linux architecture Windlass supports.
const clockTicks = 100

// processCPU returns the CPU seconds of this process and of its children
// (etcd, kube-apiserver, kube-controller-manager, windlass), by command
// name; this process's own apart from its reaped children's (git
// http-backend and the git commands it runs), and the child processes of
// each child (windlass's chart renders and large builds), reaped or
// running, apart as "<name> children".
func processCPU() map[string]float64 {
	self := os.Getpid()
	type proc struct {
		name      string
		ppid      int
		own, kids float64
	}
	procs := map[int]proc{}
	all, _ := procfs.AllProcs()
	for _, p := range all {
		s, err := p.Stat()
		if err != nil {
			continue
		}
		reaped := float64(s.CUTime+s.CSTime) / clockTicks
		procs[s.PID] = proc{name: s.Comm, ppid: s.PPID, own: s.CPUTime(), kids: reaped}
	}
	out := map[string]float64{}
	for pid, p := range procs {
		switch {
		case pid == self:
			out["bench"] += p.own
			out["git (reaped children)"] += p.kids
		case p.ppid == self:
			out[p.name] += p.own
			if p.kids > 0 {
				out[p.name+" children"] += p.kids
			}
		case procs[p.ppid].ppid == self:
			out[procs[p.ppid].name+" children"] += p.own
		}
	}
	return out
}

// cpuDelta returns after minus before, by process, leaving out processes
// that used no CPU in between.
func cpuDelta(before, after map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if x := v - before[k]; x >= 0.01 {
			d[k] = x
		}
	}
	return d
}

// serverRequests scrapes the API server's apiserver_request_total and
// returns the counts by "VERB resource[/subresource][ dry-run]".
func serverRequests(ctx context.Context, cfg *rest.Config) (map[string]int64, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping the API server's metrics: %s %v", resp.Status, err)
	}
	return parseServerRequests(body), nil
}

func parseServerRequests(body []byte) map[string]int64 {
	out := map[string]int64{}
	forEachSample(body, "apiserver_request_total", func(l map[string]string, v float64) {
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if l["dry_run"] != "" {
			key += " dry-run"
		}
		out[key] += int64(v)
	})
	return out
}

// forEachSample calls f with the labels and value of every sample of the
// metric name in a Prometheus text exposition.
func forEachSample(body []byte, name string, f func(labels map[string]string, value float64)) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, `",`) {
			k, v, _ := strings.Cut(kv, `="`)
			l[k] = strings.TrimSuffix(v, `"`)
		}
		f(l, v)
	}
}

// requestDelta returns after minus before, largest first, as "key=count"
// strings, leaving out the watches and the keys with no change.
func requestDelta(before, after map[string]int64) []string {
	type kv struct {
		k string
		v int64
	}
	var d []kv
	for k, v := range after {
		if x := v - before[k]; x > 0 && !strings.HasPrefix(k, "WATCH") {
			d = append(d, kv{k, x})
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i].v > d[j].v || (d[i].v == d[j].v && d[i].k < d[j].k) })
	out := make([]string, 0, len(d))
	for _, e := range d {
		out = append(out, fmt.Sprintf("%s=%d", e.k, e.v))
	}
	return out
}

// serverRequestsOrNil is serverRequests for a diagnostic: nil when the
// metrics cannot be read.
func serverRequestsOrNil(ctx context.Context, cfg *rest.Config) map[string]int64 {
	m, err := serverRequests(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return nil
	}
	return m
}

// startProfiles takes CPU profiles of the controller and kube-apiserver
// over cfg.ProfileSeconds, in the background, into cfg.ProfileDir, and
// returns a function that waits for them. It does nothing without
// cfg.ProfileDir, or with replicas (their failover is profiled instead:
// see profileTargets).
func startProfiles(ctx context.Context, cfg Config, restCfg *rest.Config, logf func(string, ...any)) (wait func()) {
	if cfg.ProfileDir == "" || cfg.Replicas > 1 {
		return func() {}
	}
	return profileTargets(ctx, cfg, restCfg, "", map[string]string{"windlass": cfg.PprofAddr}, logf)
}

// profileTargets takes CPU profiles over cfg.ProfileSeconds, in the
// background, of kube-apiserver and of each controller of pprofAddrs (by
// name), into cfg.ProfileDir (<prefix><name>.pprof), and returns a
// function that waits for them.
func profileTargets(ctx context.Context, cfg Config, restCfg *rest.Config, prefix string, pprofAddrs map[string]string, logf func(string, ...any)) (wait func()) {
	secs := max(cfg.ProfileSeconds, 1)
	path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs)
	var wg sync.WaitGroup
	take := func(name string, hc *http.Client, url string) {
		defer wg.Done()
		file := filepath.Join(cfg.ProfileDir, prefix+name+".pprof")
		if err := fetchTo(ctx, hc, url, file); err != nil {
			logf("profiling %s: %v", name, err)
			return
		}
		logf("wrote %s", file)
	}
	if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
		logf("profiling: %v", err)
		return func() {}
	}
	for name, addr := range pprofAddrs {
		wg.Add(1)
		go take(name, &http.Client{Timeout: time.Duration(secs+30) * time.Second}, "http://"+addr+path)
	}
	if hc, err := rest.HTTPClientFor(restCfg); err == nil {
		wg.Add(1)
		go take("kube-apiserver", hc, strings.TrimSuffix(restCfg.Host, "/")+path)
	}
	return wg.Wait
}

// fetchTo writes the body of a GET of url to path.
func fetchTo(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// quantiles returns the durations below which the fractions qs of ds lie,
// in seconds (nearest rank).
func quantiles(ds []time.Duration, qs ...float64) []float64 {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	out := make([]float64, 0, len(qs))
	for _, q := range qs {
		i := min(len(ds)-1, max(0, int(math.Ceil(q*float64(len(ds))))-1))
		out = append(out, ds[i].Seconds())
	}
	return out
}
