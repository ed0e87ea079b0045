package testservers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// gaugeHighRules alerts, at once, when windlass_test_gauge is above 40.
const gaugeHighRules = `groups:
  - name: windlass-test
    rules:
      - alert: GaugeHigh
        expr: windlass_test_gauge > 40
        for: 0s
        labels:
          severity: page
        annotations:
          summary: "the gauge is {{ $value }}"
`

// gaugeLowRules alerts, at once, when windlass_test_gauge is below 100.
const gaugeLowRules = `groups:
  - name: windlass-test
    rules:
      - alert: GaugeLow
        expr: windlass_test_gauge < 100
        for: 0s
`

// serveGauge serves windlass_test_gauge{kind="demo"} 42 in the text
// format at path on a loopback port, and returns its host:port.
func serveGauge(t *testing.T, path string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte("# HELP windlass_test_gauge A gauge for the test.\n" +
			"# TYPE windlass_test_gauge gauge\n" +
			"windlass_test_gauge{kind=\"demo\"} 42\n"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestPrometheusScrapesATargetAndFiresItsAlert(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr := serveGauge(t, "/custom/metrics")
	prom := StartPrometheus(t, PrometheusOptions{
		Targets: []PrometheusTarget{{Job: "gauge", Addr: addr, Path: "/custom/metrics",
			Labels: map[string]string{"team": "platform"}}},
		Rules: [][]byte{[]byte(gaugeHighRules)},
	})
	g.Expect(prom.URL()).To(HavePrefix("http://127.0.0.1:"))
	g.Expect(prom.Interval).To(Equal(time.Second))

	prom.WaitScraped(t, "gauge")
	v, err := prom.Query(ctx, "windlass_test_gauge")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(HaveLen(1))
	g.Expect(v[0].Value).To(Equal(42.0))
	g.Expect(v[0].Labels).To(Equal(map[string]string{"__name__": "windlass_test_gauge",
		"job": "gauge", "instance": addr, "team": "platform", "kind": "demo"}))
	g.Expect(v[0].Time).To(BeTemporally("~", time.Now(), 10*time.Second))

	v, err = prom.Query(ctx, "1 + 1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(HaveLen(1))
	g.Expect(v[0].Value).To(Equal(2.0))
	_, err = prom.Query(ctx, "windlass_test_gauge{")
	g.Expect(err).To(MatchError(ContainSubstring("bad_data")))

	targets, err := prom.Targets(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(targets).To(HaveLen(1))
	g.Expect(targets[0].Job).To(Equal("gauge"))
	g.Expect(targets[0].URL).To(Equal("http://" + addr + "/custom/metrics"))
	g.Expect(targets[0].Health).To(Equal("up"))

	g.Eventually(func(g Gomega) {
		alerts, err := prom.Alerts(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(alerts).To(HaveLen(1))
		a := alerts[0]
		g.Expect(a.State).To(Equal("firing"))
		g.Expect(a.Labels).To(HaveKeyWithValue("alertname", "GaugeHigh"))
		g.Expect(a.Labels).To(HaveKeyWithValue("severity", "page"))
		g.Expect(a.Labels).To(HaveKeyWithValue("team", "platform"))
		g.Expect(a.Annotations).To(HaveKeyWithValue("summary", "the gauge is 42"))
		g.Expect(a.Value).To(Equal(42.0))
		g.Expect(a.ActiveAt).To(BeTemporally("~", time.Now(), 30*time.Second))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	files := prom.RuleFiles()
	g.Expect(files).To(HaveLen(1))
	out, err := runPromtool(t, append([]string{"check", "rules"}, files...)...)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("SUCCESS: 1 rules found"))
}

func TestPrometheusReplaceRulesReloadsThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	prom := StartPrometheus(t, PrometheusOptions{
		Targets: []PrometheusTarget{{Job: "gauge", Addr: serveGauge(t, "/metrics")}},
		Rules:   [][]byte{[]byte(gaugeHighRules)},
	})
	prom.WaitScraped(t, "gauge")

	prom.ReplaceRules(t, []byte(gaugeLowRules))
	g.Eventually(func(g Gomega) {
		alerts, err := prom.Alerts(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(alerts).To(HaveLen(1))
		g.Expect(alerts[0].Labels).To(HaveKeyWithValue("alertname", "GaugeLow"))
		g.Expect(alerts[0].State).To(Equal("firing"))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

func TestPrometheusPromtoolRejectsABrokenRule(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "broken.yml")
	g.Expect(os.WriteFile(file, []byte(strings.Replace(gaugeHighRules, "> 40", "> ", 1)), 0o600)).To(Succeed())
	out, err := runPromtool(t, "check", "rules", file)
	var exitErr *exec.ExitError
	g.Expect(err).To(BeAssignableToTypeOf(exitErr), out)
	g.Expect(out).To(ContainSubstring("FAILED"))
}

func TestPrometheusIsTheVersionItsModulePins(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile("../../../hack/testservers/prometheus/go.mod")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(MatchRegexp(`(?m)^\s*(require\s+)?github\.com/prometheus/prometheus `+PrometheusVersion+`(\s|$)`),
		"hack/testservers/prometheus/go.mod pins another Prometheus than PrometheusVersion")
}

// runPromtool runs promtool with args and returns its combined output.
func runPromtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Promtool(t), args...)
	cmd.Env = serverEnv(t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}
