package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/procfs"
)

// ReferenceResult holds what a -controllers reference run measured of
// each reference controller. The run's own figures are their sums:
// peak_rss_bytes is the largest sum of their VmRSS sampled every 100 ms
// (PeakRSSSumBytes), cpu_seconds the sum of their CPU time at the end of
// the ready phase, api_requests the sum of their
// rest_client_requests_total then.
type ReferenceResult struct {
	// Controllers are source-controller and kustomize-controller, in that
	// order.
	Controllers []ReferenceProcess `json:"controllers"`
	// PeakRSSSumBytes is the largest sum of the processes' VmRSS, sampled
	// every 100 ms from their start until the end of the no-op tick.
	PeakRSSSumBytes int64 `json:"peak_rss_sum_bytes"`
	// PeakRSSAnonSumBytes is the same for the sum of their RssAnon.
	PeakRSSAnonSumBytes int64 `json:"peak_rss_anon_sum_bytes"`
	// ReadyServerRequests and NoopServerRequests are the requests the API
	// server served over the ready phase and the no-op tick, by verb and
	// resource, largest count first ("PATCH kustomizations/status=1400"):
	// the reference controllers' and kube-controller-manager's, as in the
	// table of a Windlass run.
	ReadyServerRequests []string `json:"ready_server_requests"`
	NoopServerRequests  []string `json:"noop_tick_server_requests"`
	// Kubeconfig says as whom they ran.
	Kubeconfig string `json:"kubeconfig"`
	// Skipped names the figures of a Windlass run that this run leaves
	// out, with the reason.
	Skipped map[string]string `json:"skipped"`
}

// ReferenceProcess holds one reference controller's figures.
type ReferenceProcess struct {
	// Name is source-controller or kustomize-controller, and Version the
	// module version it was built from.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Concurrent is its --concurrent: -concurrent, or its default.
	Concurrent int `json:"concurrent"`
	// PeakRSSBytes is its VmHWM at the end of the run.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// StartupCPUSeconds is its CPU time once ready, before any object;
	// ReadyCPUSeconds its CPU time over the ready phase; CPUSeconds its
	// CPU time at the end of the run (every phase).
	StartupCPUSeconds float64 `json:"startup_cpu_seconds"`
	ReadyCPUSeconds   float64 `json:"ready_cpu_seconds"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	// APIRequests is the sum of its rest_client_requests_total at the end
	// of the run.
	APIRequests int64 `json:"api_requests"`
}

// referenceSkipped are the figures a reference run leaves out, and why.
var referenceSkipped = map[string]string{
	"ready_requests":     "counted from windlass_api_requests_total, which only Windlass exports; api_requests and the API server's requests by verb and resource cover both",
	"noop_tick_requests": "counted from windlass_api_requests_total, which only Windlass exports; the no-op tick's API server requests cover both",
	"metrics":            "times Windlass's /metrics (issue 29), not a figure of the reference controllers",
}

// finish records the reference controllers' figures into res and leaves
// out those that come from Windlass's own metrics.
func (ref *referenceRun) finish(res *Result) {
	out := &ReferenceResult{
		Kubeconfig: "ServiceAccount " + controllerNamespace + "/" + controllerServiceAccount +
			" bound to the ClusterRole of config/rbac (a token, as windlass runs)",
		Skipped:             referenceSkipped,
		ReadyServerRequests: res.Details.ReadyServerRequests,
		NoopServerRequests:  res.Details.NoopServerRequests,
	}
	if ref.peakRSS != nil {
		out.PeakRSSSumBytes = ref.peakRSS()
	}
	out.PeakRSSAnonSumBytes = res.Details.PeakRSSAnonBytes
	for i, p := range ref.procs {
		b := ref.bins[i]
		st, _ := p.procStats()
		rp := ReferenceProcess{Name: b.Name, Version: b.Version, Concurrent: ref.concurrent[b.Name],
			PeakRSSBytes: st.PeakRSSBytes, StartupCPUSeconds: ref.startupCPU[b.Name], CPUSeconds: st.CPUSeconds,
			ReadyCPUSeconds: res.Details.ReadyCPU[procName(p.Pid())]}
		if body, err := p.metrics(); err == nil {
			rp.APIRequests, _, _ = sumRESTRequests(strings.NewReader(string(body)))
		}
		out.Controllers = append(out.Controllers, rp)
	}
	res.Reference = out
	res.PeakRSSBytes = out.PeakRSSSumBytes
	res.ReadyRequests, res.NoopTickRequests, res.NoopTickRequestsPerObject = nil, nil, 0
	res.Metrics = nil
}

// procName is the command name of process pid, as processCPU keys it.
func procName(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	name, _ := p.Comm()
	return name
}

// referenceRows are the table rows of a reference run.
func referenceRows(ref *ReferenceResult) [][2]string {
	rows := [][2]string{{"controllers", "reference: source-controller and kustomize-controller (figures above are their sums)"},
		{"  peak RSS, sum of both (sampled)", fmt.Sprintf("%.1f MiB (anonymous %.1f MiB)",
			float64(ref.PeakRSSSumBytes)/(1<<20), float64(ref.PeakRSSAnonSumBytes)/(1<<20))}}
	for _, p := range ref.Controllers {
		rows = append(rows, [2]string{"  " + p.Name + " " + p.Version, fmt.Sprintf(
			"VmHWM %.1f MiB, CPU %.2fs at start-up + %.2fs ready phase (%.2fs in all), %d API requests, concurrent %d",
			float64(p.PeakRSSBytes)/(1<<20), p.StartupCPUSeconds, p.ReadyCPUSeconds, p.CPUSeconds, p.APIRequests, p.Concurrent)})
	}
	rows = append(rows, [2]string{"  as", ref.Kubeconfig})
	for _, k := range []string{"ready_requests", "noop_tick_requests", "metrics"} {
		if why, ok := ref.Skipped[k]; ok {
			rows = append(rows, [2]string{"  not measured: " + k, why})
		}
	}
	return rows
}

// Exited reports whether a process of c's group has exited.
func (c *controller) Exited() bool {
	for _, p := range c.all() {
		if p.Process.Exited() {
			return true
		}
	}
	return false
}

// Err returns the exit errors of the processes of c's group that exited.
func (c *controller) Err() error {
	var errs []error
	for _, p := range c.all() {
		if p.Process.Exited() {
			errs = append(errs, p.Process.Err())
		}
	}
	return errors.Join(errs...)
}

// Output returns what c's process has written so far, and with a group,
// what each process of it wrote, under its command name.
func (c *controller) Output() string {
	if len(c.group) == 0 {
		return c.Process.Output()
	}
	var b strings.Builder
	for _, p := range c.all() {
		fmt.Fprintf(&b, "--- %s (pid %d):\n%s", p.name, p.Pid(), p.Process.Output())
	}
	return b.String()
}
