package metrics

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// textFormat is the exposition format Handler writes: Prometheus's text
// format, which every scraper reads.
var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// gzipWriters are reused across scrapes: a gzip writer's tables weigh
// hundreds of kilobytes.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

// Handler serves the metrics: those registered with controller-runtime's
// registry (the controllers', the work queues', the API client's, Go's
// and the process's), then the series about every object, written
// straight from the objects' runs and the shared cache. Thousands of
// objects then cost a scrape a few milliseconds and little memory, rather
// than a client-library sample each. A scrape that names families
// (?name=a&name=b, a scrape config's params) gets only those, and costs
// only what they do.
func Handler() http.Handler {
	return handler(crmetrics.Registry, Resources)
}

// handler serves the metrics of g, then the objects' series, those of
// their runs and those res reads from the cache.
func handler(g prometheus.Gatherer, res *resources) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, err := g.Gather()
		if err != nil && len(families) == 0 {
			http.Error(w, "gathering the metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(textFormat))
		var out io.Writer = w
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzipWriters.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() {
				_ = gz.Close()
				gzipWriters.Put(gz)
			}()
			out = gz
		}
		bw := bufio.NewWriterSize(out, 32<<10)
		enc := expfmt.NewEncoder(bw, textFormat)
		t := &textWriter{w: bw, buf: make([]byte, 0, 512), only: familiesAsked(r)}
		for _, f := range families {
			if !t.wants(f.GetName()) {
				continue
			}
			if err := enc.Encode(f); err != nil {
				return
			}
		}
		objects.writeText(t)
		res.writeText(r.Context(), t)
		_ = bw.Flush()
	})
}

// familiesAsked returns the families a scrape names (?name=...), nil for
// all of them.
func familiesAsked(r *http.Request) map[string]bool {
	names := r.URL.Query()["name"]
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}
