package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/cli"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/isolate"
)

// memoryLimit is the memory limit of the install's Deployment, which it
// hands the controller in WINDLASS_MEMORY_LIMIT.
const memoryLimit = 2 << 30

// largeIndexTenants and largeIndexSize: how many tenants each point a
// HelmRepository at an index.yaml of that size. Parsing one takes about
// ten times its size: together, unbounded, far more than memoryLimit.
const (
	largeIndexTenants = 4
	largeIndexSize    = 30 << 20
)

// Issue 27, memory bounded by design: the controller, run as the install
// runs it (the Deployment's memory limit in WINDLASS_MEMORY_LIMIT, the
// default flags), serves several tenants whose HelmRepositories each name
// an index.yaml of 30 MiB (parsed, each would take about 300 MiB; all at
// once, more than the controller's share of the limit), and a tenant with
// a small GitRepository and Kustomization. The index parses take turns
// within --helm-index-parse-max-memory: every repository is stored, the
// small tenant is served meanwhile, and the process's peak resident
// memory stays under the limit less the room the chart renders' processes
// may take beside it.
func TestController_LargeIndexesOfManyTenantsStayUnderTheMemoryLimit(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	index := largeIndex(largeIndexSize)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/index.yaml") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/yaml")
		_, _ = w.Write(index)
	}))
	t.Cleanup(srv.Close)

	const shard = "memory"
	proc, err := startControllerWithEnv(kubeconfig, filepath.Join(t.TempDir(), "artifacts"), shardLabel+"="+shard,
		[]string{cli.MemoryLimitEnv + "=" + strconv.Itoa(memoryLimit)})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proc.Kill)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("windlass controller output:\n%s", proc.Output())
		}
	})

	var repos []client.ObjectKey
	for i := range largeIndexTenants {
		ns := env.CreateNamespace(t)
		createSharded(g, shard, &sourcev1.HelmRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: %s}
spec:
  interval: 1h
  url: %s/tenant-%d
`, ns, srv.URL, i))
		repos = append(repos, client.ObjectKey{Namespace: ns, Name: "charts"})
	}
	small := env.CreateNamespace(t)
	url, sha := servedRepo(t, "small.git", map[string]string{"deploy/a.yaml": configMapYAML(small, "a")})
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(small, "app", url))
	ks := createSharded(g, shard, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec:
  interval: 10m
  path: ./deploy
  prune: true
  sourceRef: {kind: GitRepository, name: app}
`, small))
	waitApplied(g, client.ObjectKeyFromObject(ks), "main@sha1:"+sha)
	t.Logf("the small tenant applied %.1fs after the start", time.Since(start).Seconds())

	for _, key := range repos {
		g.Eventually(func(g Gomega) {
			got := &sourcev1.HelmRepository{}
			g.Expect(env.Client.Get(context.Background(), key, got)).To(Succeed())
			g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue(), conditions.Message(got, meta.ReadyCondition))
			g.Expect(got.Status.Artifact).NotTo(BeNil())
		}, timeout, interval).Should(Succeed(), "HelmRepository %s", key)
	}
	peak := peakRSS(g, proc.Pid())
	bound := int64(memoryLimit) - isolate.DefaultPoolMemory
	t.Logf("%d indexes of %d MiB stored %.1fs after the start; peak resident memory %d MiB (bound %d MiB, limit %d MiB)",
		largeIndexTenants, len(index)>>20, time.Since(start).Seconds(), peak>>20, bound>>20, memoryLimit>>20)
	g.Expect(proc.Exited()).To(BeFalse())
	g.Expect(proc.Output()).To(ContainSubstring("Set the Go memory limit from the container's"))
	g.Expect(peak).To(BeNumerically("<", bound))
}

// largeIndex returns an index.yaml of about size bytes, shaped as a large
// public repository's: many charts, many versions each, with the fields
// such an index carries.
func largeIndex(size int) []byte {
	var b strings.Builder
	b.Grow(size + 4096)
	b.WriteString("apiVersion: v1\nentries:\n")
	for c := 0; b.Len() < size; c++ {
		fmt.Fprintf(&b, "  chart-%04d:\n", c)
		for v := 0; v < 100 && b.Len() < size; v++ {
			fmt.Fprintf(&b, `  - apiVersion: v2
    appVersion: %[1]d.%[2]d.0
    created: "2026-01-01T10:00:00.000000000Z"
    description: A chart of a large repository, number %[3]d, with a description of the usual length.
    digest: %064[3]x
    home: https://example.com/charts/chart-%04[3]d
    keywords: [web, example, large]
    maintainers:
    - name: Maintainers
      email: maintainers@example.com
    name: chart-%04[3]d
    urls:
    - https://example.com/charts/chart-%04[3]d-%[1]d.%[2]d.0.tgz
    version: %[1]d.%[2]d.0
`, v/10+1, v%10, c)
		}
	}
	b.WriteString("generated: \"2026-01-01T10:00:00Z\"\n")
	return []byte(b.String())
}

// peakRSS returns the peak resident memory (VmHWM) of process pid.
func peakRSS(g Gomega, pid int) int64 {
	return statusBytes(g, pid, "VmHWM")
}

// statusBytes returns the field of /proc/<pid>/status given in kB, such
// as VmHWM or RssFile, in bytes.
func statusBytes(g Gomega, pid int, field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	g.Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			g.Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	g.Expect(field).To(BeEmpty(), "no %s in /proc/%d/status", field, pid)
	return 0
}

// The controller drops the pages of its binary that start-up touched, at
// once and once its caches have synced, evicting them from the page cache
// both times: its file-backed resident memory
// falls to the code it runs, well under what start-up mapped. (What other
// goroutines run between a drop and its reading comes back at once, so no
// one drop need halve it: the test compares the most any drop found mapped
// with the least any drop left.)
func TestController_DropsTheBinaryPagesOnceSynced(t *testing.T) {
	g := NewWithT(t)
	proc := startShardController(t, g, "pageout", t.TempDir(), "--log-level", "debug")
	dropped := regexp.MustCompile(`Dropped the binary's pages\s+\{"evicted": (true|false), "residentFileBytesBefore": (\d+), "residentFileBytesAfter": (\d+)\}`)
	g.Eventually(func(g Gomega) {
		found := dropped.FindAllStringSubmatch(proc.Output(), -1)
		g.Expect(len(found)).To(BeNumerically(">=", 2), "dropped at start and once synced")
		g.Expect([]string{found[0][1], found[1][1]}).To(Equal([]string{"true", "true"}), "the first two drops evict the page cache too")
		var mostBefore, leastAfter int64 = 0, math.MaxInt64
		for _, f := range found {
			before, _ := strconv.ParseInt(f[2], 10, 64)
			after, _ := strconv.ParseInt(f[3], 10, 64)
			mostBefore, leastAfter = max(mostBefore, before), min(leastAfter, after)
		}
		g.Expect(leastAfter).To(BeNumerically("<", mostBefore/2), "the drops halve what start-up mapped of the binary: %v", found)
		g.Expect(leastAfter).To(BeNumerically("<", 40<<20), "what stays mapped of the binary is under 40 MiB: %v", found)
	}, timeout, interval).Should(Succeed())
}
