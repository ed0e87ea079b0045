package manager

import (
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/windlass-dev/windlass/internal/httpserver"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// PprofPath is where the metrics port serves Go's profiles with
// Options.EnablePprof.
const PprofPath = "/debug/pprof/"

// metricsServer returns the server of the metrics port (nil when
// MetricsAddr is empty or "0"): /metrics (metrics.Handler, which writes
// the series about every object without a client-library sample each)
// and, with EnablePprof, Go's profiles.
func (o Options) metricsServer() *httpserver.Runnable {
	if o.MetricsAddr == "" || o.MetricsAddr == "0" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler())
	if o.EnablePprof {
		for path, h := range PprofHandlers() {
			mux.Handle(path, h)
		}
	}
	return &httpserver.Runnable{Addr: o.MetricsAddr, Grace: 5 * time.Second, Server: &http.Server{Handler: mux,
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}}
}

// PprofHandlers are the handlers of Go's profiles, by path under
// PprofPath.
func PprofHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		PprofPath:             http.HandlerFunc(pprof.Index),
		PprofPath + "cmdline": http.HandlerFunc(pprof.Cmdline),
		PprofPath + "profile": http.HandlerFunc(pprof.Profile),
		PprofPath + "symbol":  http.HandlerFunc(pprof.Symbol),
		PprofPath + "trace":   http.HandlerFunc(pprof.Trace),
	}
}
