package metrics

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/state"
)

// TestHandlerServesOneValidExposition: the registry's families and the
// objects' are one exposition that Prometheus parses, plain or gzipped,
// with each family once; a label value that needs escaping is escaped.
func TestHandlerServesOneValidExposition(t *testing.T) {
	g := NewWithT(t)
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "quote\"and\\slash", Namespace: "handler-test"}}
	r := served(t, kinds.All, repo)
	RecordDuration("GitRepository", repo, time.Now().Add(-2*time.Second))
	RecordSuspend("GitRepository", repo, false)
	RecordRun("GitRepository", repo, state.Ready, time.Now())
	t.Cleanup(func() { Forget("GitRepository", client.ObjectKeyFromObject(repo)) })
	reg := prometheus.NewRegistry()
	reg.MustRegister(Reconciles)
	h := handler(reg, r)

	for _, encoding := range []string{"", "gzip"} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", encoding)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		g.Expect(rec.Code).To(Equal(200))
		g.Expect(rec.Header().Get("Content-Type")).To(HavePrefix("text/plain; version=0.0.4"))
		var body io.Reader = rec.Body
		if encoding == "gzip" {
			g.Expect(rec.Header().Get("Content-Encoding")).To(Equal("gzip"))
			zr, err := gzip.NewReader(rec.Body)
			g.Expect(err).NotTo(HaveOccurred())
			body = zr
		}
		data, err := io.ReadAll(body)
		g.Expect(err).NotTo(HaveOccurred())
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(string(data)))
		g.Expect(err).NotTo(HaveOccurred(), "a valid exposition, each family once")
		g.Expect(families).To(HaveKey("windlass_reconcile_total"))
		g.Expect(families).To(HaveKey("gotk_resource_info"))
		g.Expect(string(data)).To(ContainSubstring(`gotk_reconcile_duration_seconds_bucket{kind="GitRepository",name="quote\"and\\slash",namespace="handler-test",le="+Inf"} 1`))
		g.Expect(string(data)).To(ContainSubstring(`gotk_reconcile_duration_seconds_bucket{kind="GitRepository",name="quote\"and\\slash",namespace="handler-test",le="0.5646216173286169"} 0`))
		g.Expect(string(data)).To(ContainSubstring(`gotk_reconcile_duration_seconds_bucket{kind="GitRepository",name="quote\"and\\slash",namespace="handler-test",le="2.166090855590701"} 1`))
		g.Expect(string(data)).To(ContainSubstring(`gotk_reconcile_duration_seconds_count{kind="GitRepository",name="quote\"and\\slash",namespace="handler-test"} 1`))
		g.Expect(string(data)).To(ContainSubstring(`gotk_suspend_status{kind="GitRepository",name="quote\"and\\slash",namespace="handler-test"} 0`))
		g.Expect(string(data)).To(MatchRegexp(`windlass_reconcile_last_success_timestamp_seconds\{kind="GitRepository",exported_namespace="handler-test",name="quote\\"and\\\\slash"\} 1\.\d+e\+09`))
	}
}

// TestHandlerServesTheFamiliesAsked: a scrape that names families gets
// those and no other, whether the registry or the objects' series hold
// them; a name that no family has gives an empty exposition.
func TestHandlerServesTheFamiliesAsked(t *testing.T) {
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "asked", Namespace: "handler-families-test"}}
	r := served(t, kinds.All, repo)
	RecordDuration("GitRepository", repo, time.Now().Add(-time.Second))
	RecordRun("GitRepository", repo, state.Ready, time.Now())
	t.Cleanup(func() { Forget("GitRepository", client.ObjectKeyFromObject(repo)) })
	reg := prometheus.NewRegistry()
	reg.MustRegister(Reconciles)
	h := handler(reg, r)

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", nil},
		{"name=" + lastSuccessName, []string{lastSuccessName}},
		{"name=windlass_reconcile_total", []string{"windlass_reconcile_total"}},
		{"name=" + reconcileDurationName + "&name=" + resourceInfoName, []string{reconcileDurationName, resourceInfoName}},
		{"name=no_such_family", []string{}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			g := NewWithT(t)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics?"+tc.query, nil))
			g.Expect(rec.Code).To(Equal(200))
			parser := expfmt.NewTextParser(model.UTF8Validation)
			families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
			g.Expect(err).NotTo(HaveOccurred())
			if tc.want == nil {
				g.Expect(families).To(HaveKey(lastSuccessName))
				g.Expect(families).To(HaveKey("windlass_reconcile_total"))
				g.Expect(families).To(HaveKey(resourceInfoName))
				everyFamilyAlone(g, h, families)
				return
			}
			var got []string
			for name, f := range families {
				if len(f.GetMetric()) > 0 {
					got = append(got, name)
				}
			}
			g.Expect(got).To(ConsistOf(tc.want))
			for name := range families {
				g.Expect(tc.want).To(ContainElement(name), "no HELP or TYPE of a family not asked")
			}
		})
	}
}

// everyFamilyAlone checks that a scrape naming one of families, those of
// a full scrape, gets that family with the samples the full scrape had.
func everyFamilyAlone(g Gomega, h http.Handler, families map[string]*dto.MetricFamily) {
	for name, f := range families {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics?name="+name, nil))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		alone, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(alone).To(HaveLen(1), name)
		g.Expect(alone).To(HaveKey(name))
		g.Expect(alone[name].GetMetric()).To(HaveLen(len(f.GetMetric())), name)
	}
}
