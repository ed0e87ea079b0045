package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// httpClient is the client the tests download and scrape with.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// servedRepo serves a bare repository named name over loopback HTTP with
// one commit of files on main, and returns its clone URL and the commit's
// SHA.
func servedRepo(t *testing.T, name string, files map[string]string) (url, sha string) {
	t.Helper()
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, name, "main")
	sha = repo.MustCommit(t, "main", files, "initial commit")
	return base + "/" + name, sha
}

// applyGitRepository creates the GitRepository that manifest (YAML)
// declares, as `kubectl apply` of a new object does, and returns it.
func applyGitRepository(g *WithT, manifest string) *sourcev1.GitRepository {
	obj := &sourcev1.GitRepository{}
	g.Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed(), manifest)
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return obj
}

// waitReady waits until the v1 GitRepository key is Ready for its current
// generation with an artifact of revision, and returns it.
func waitReady(g *WithT, key client.ObjectKey, revision string) *sourcev1.GitRepository {
	return waitReadyIn(g, env.Client, key, revision)
}

// waitReadyIn is waitReady against the control plane of c.
func waitReadyIn(g *WithT, c client.Client, key client.ObjectKey, revision string) *sourcev1.GitRepository {
	got := &sourcev1.GitRepository{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), key, got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue(), "Ready")
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), "observedGeneration")
		g.Expect(got.Status.Artifact).NotTo(BeNil(), "artifact")
		g.Expect(got.Status.Artifact.Revision).To(Equal(revision), "artifact revision")
	}, timeout, interval).Should(Succeed(), func() string {
		return fmt.Sprintf("status of %s: %+v", key, got.Status)
	})
	return got
}

// scrape returns the text of GET url.
func scrape(g Gomega, url string) string {
	resp, err := httpClient.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s", url)
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return string(body)
}

// warningRecorder keeps the warnings the API server sends, as kubectl
// prints them.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// Warnings returns the warnings received so far.
func (w *warningRecorder) Warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

// clientWithWarnings returns a client of the control plane that records
// the API server's warnings in the returned recorder.
func clientWithWarnings(g *WithT) (client.Client, *warningRecorder) {
	rec := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = rec
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return c, rec
}

// metricLines returns the lines of a Prometheus text exposition that hold
// samples of name (with labels).
func metricLines(text, name string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, name+"{") {
			out = append(out, line)
		}
	}
	return out
}

// lastSuccessSeries matches the series of an object's last successful run.
var lastSuccessSeries = regexp.MustCompile(`^windlass_reconcile_last_success_timestamp_seconds\{kind="([^"]+)",exported_namespace="([^"]+)",name="([^"]+)"\}`)

// succeededOn returns the objects ("Kind/namespace/name") that a run of one
// of the replicas left Ready, from the replicas' own metrics.
func succeededOn(g Gomega, replicas map[string]*controller) map[string]bool {
	out := map[string]bool{}
	for _, proc := range replicas {
		for _, line := range metricLines(scrape(g, "http://"+proc.MetricsAddr+"/metrics"), "windlass_reconcile_last_success_timestamp_seconds") {
			if m := lastSuccessSeries.FindStringSubmatch(line); m != nil {
				out[m[1]+"/"+m[2]+"/"+m[3]] = true
			}
		}
	}
	return out
}

// apiRequestsOf returns the number of API requests the replicas sent, by
// their windlass_api_requests_total, whose labels include every one of
// labels (such as `verb="get"`).
func apiRequestsOf(g Gomega, replicas map[string]*controller, labels ...string) int {
	total := 0
	for _, proc := range replicas {
		for _, line := range metricLines(scrape(g, "http://"+proc.MetricsAddr+"/metrics"), "windlass_api_requests_total") {
			if labelled(line, labels) {
				fields := strings.Fields(line)
				n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
				g.Expect(err).NotTo(HaveOccurred(), line)
				total += int(n)
			}
		}
	}
	return total
}

// labelled tells whether a sample line holds every one of labels.
func labelled(line string, labels []string) bool {
	for _, l := range labels {
		if !strings.Contains(line, l) {
			return false
		}
	}
	return true
}

// nestedString returns the string at fields in u, or "" when there is none.
func nestedString(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}
