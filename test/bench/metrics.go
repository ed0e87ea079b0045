package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// metricsScrapes is how many timed scrapes the metrics phase makes, after
// one warm-up.
const metricsScrapes = 20

// MetricsResult holds what the controller's metrics endpoint costs once
// every application is Ready: issue 29 asks for an answer under 100 ms at
// N=1000.
type MetricsResult struct {
	// Scrapes is the number of timed scrapes, one at a time, each read
	// whole (gzip, as Prometheus asks).
	Scrapes int `json:"scrapes"`
	// P50Seconds and MaxSeconds are the median and the largest scrape.
	P50Seconds float64 `json:"p50_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
	// Bytes is the size of the exposition, uncompressed, and Series the
	// number of its samples.
	Bytes  int `json:"bytes"`
	Series int `json:"series"`
	// CPUSeconds is the controller's CPU time per scrape.
	CPUSeconds float64 `json:"cpu_seconds"`
	// AllocatedBytes is the increase of the controller's
	// go_memstats_alloc_bytes_total per scrape: what a scrape allocates
	// (and whatever else ran meanwhile, nothing once all is Ready).
	AllocatedBytes float64 `json:"allocated_bytes"`
}

// metricsPhase times the controller's /metrics, once its requests after
// the ready phase are done.
func (r *run) metricsPhase(ctx context.Context, res *Result) error {
	if _, err := r.ctrl.waitRequestsStill(ctx, settleBound); err != nil {
		return err
	}
	if _, err := r.ctrl.metrics(); err != nil {
		return err
	}
	st0, err := r.ctrl.stats()
	if err != nil {
		return err
	}
	var (
		ds          []time.Duration
		first, last []byte
	)
	for i := range metricsScrapes {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		body, err := r.ctrl.metrics()
		if err != nil {
			return err
		}
		ds = append(ds, time.Since(start))
		if i == 0 {
			first = body
		}
		last = body
	}
	st1, err := r.ctrl.stats()
	if err != nil {
		return err
	}
	q := quantiles(ds, 0.5, 1)
	m := &MetricsResult{Scrapes: metricsScrapes, P50Seconds: q[0], MaxSeconds: q[1], Bytes: len(last), Series: samples(last),
		CPUSeconds: (st1.CPUSeconds - st0.CPUSeconds) / metricsScrapes}
	if a0, ok := sampleValue(first, "go_memstats_alloc_bytes_total"); ok {
		if a1, ok := sampleValue(last, "go_memstats_alloc_bytes_total"); ok {
			m.AllocatedBytes = (a1 - a0) / (metricsScrapes - 1)
		}
	}
	res.Metrics = m
	r.logf("metrics: p50 %.1fms max %.1fms, CPU %.1fms a scrape, %d series, %.1f MiB, %.1f MiB allocated a scrape",
		1000*m.P50Seconds, 1000*m.MaxSeconds, 1000*m.CPUSeconds, m.Series, float64(m.Bytes)/(1<<20), m.AllocatedBytes/(1<<20))
	return nil
}

// samples counts the samples of a Prometheus text exposition.
func samples(body []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

// sampleValue returns the value of the unlabelled sample name in body.
func sampleValue(body []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// metricsRows are the table rows of a run's metrics phase.
func metricsRows(m *MetricsResult) [][2]string {
	return [][2]string{{"metrics endpoint (GET /metrics)", fmt.Sprintf("p50 %.1fms max %.1fms, CPU %.1fms a scrape, %d series, %.1f MiB (%.1f MiB allocated a scrape; %d scrapes after a warm-up)",
		1000*m.P50Seconds, 1000*m.MaxSeconds, 1000*m.CPUSeconds, m.Series, float64(m.Bytes)/(1<<20), m.AllocatedBytes/(1<<20), m.Scrapes)}}
}
