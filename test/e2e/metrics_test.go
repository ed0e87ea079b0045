package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/parallel"
)

// cardinalityObjects is how many objects the cardinality story creates:
// half GitRepositories, half Kustomizations.
const cardinalityObjects = 1000

// TestMetrics_ObjectsCreatedAndDeletedLeaveNoSeries: 1,000 objects, each
// with its series in the controller's metrics once reconciled, leave no
// series behind once deleted.
func TestMetrics_ObjectsCreatedAndDeletedLeaveNoSeries(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	objs := make([]client.Object, 0, cardinalityObjects)
	for i := range cardinalityObjects / 2 {
		name := fmt.Sprintf("app-%03d", i)
		// A source that cannot be fetched (nothing listens on port 1) and
		// a Kustomization that waits for a source that does not exist:
		// each is reconciled, quickly, and has its series.
		repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: sourcev1.GitRepositorySpec{URL: "http://127.0.0.1:1/" + name + ".git", Interval: metav1.Duration{Duration: time.Hour}}}
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Path: "./",
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "absent-" + name}}}
		objs = append(objs, repo, ks)
	}
	errs := make([]error, len(objs))
	g.Expect(parallel.Do(ctx, len(objs), 16, func(i int) { errs[i] = env.Client.Create(ctx, objs[i]) })).To(BeEmpty())
	g.Expect(errors.Join(errs...)).NotTo(HaveOccurred())

	metrics := "http://" + ctrlProc.MetricsAddr + "/metrics"
	g.Eventually(func(g Gomega) {
		body := scrape(g, metrics)
		g.Expect(seriesOf(body, "gotk_resource_info{", ns)).To(Equal(cardinalityObjects))
		g.Expect(seriesOf(body, "gotk_reconcile_duration_seconds_count{", ns)).To(Equal(cardinalityObjects))
	}, 3*timeout, 250*time.Millisecond).Should(Succeed(), "every object is reconciled and has its series")

	for _, obj := range []client.Object{&kustomizev1.Kustomization{}, &sourcev1.GitRepository{}} {
		g.Expect(env.Client.DeleteAllOf(ctx, obj, client.InNamespace(ns))).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		var left []string
		for _, line := range strings.Split(scrape(g, metrics), "\n") {
			if strings.Contains(line, `"`+ns+`"`) {
				left = append(left, line)
			}
		}
		g.Expect(left).To(BeEmpty(), "series of deleted objects")
	}, 3*timeout, 250*time.Millisecond).Should(Succeed())
}

// seriesOf counts the samples of body that start with prefix and name the
// namespace ns.
func seriesOf(body, prefix, ns string) int {
	n := 0
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, `amespace="`+ns+`"`) {
			n++
		}
	}
	return n
}

// TestDebug_ProfileOfARunningController: a controller started with
// --enable-pprof serves Go's profiles on its metrics port, and windlass
// debug profile fetches one; without the flag it serves none, and says
// how to turn them on.
func TestDebug_ProfileOfARunningController(t *testing.T) {
	g := NewWithT(t)
	shard := "pprof-" + env.CreateNamespace(t)
	proc := startMonitoredController(t, g, shard, nil, "--enable-pprof", "--controllers=gating")
	g.Expect(proc.waitReady(timeout)).To(Succeed())
	file := filepath.Join(t.TempDir(), "heap.pprof")
	out, err := windlassCommand(context.Background(), "debug", "profile", "heap", "--url", "http://"+proc.MetricsAddr, "-o", file).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(HavePrefix("✔ heap profile of http://" + proc.MetricsAddr + " written to " + file))
	data, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data[:2]).To(Equal([]byte{0x1f, 0x8b}), "a gzipped pprof profile")
	g.Expect(scrape(g, "http://"+proc.MetricsAddr+"/metrics")).To(ContainSubstring("# TYPE windlass_build_info gauge"))

	out, err = windlassCommand(context.Background(), "debug", "profile", "--url", "http://"+ctrlProc.MetricsAddr, "-o", file).CombinedOutput()
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("serves no profiles (HTTP 404): start the controller with --enable-pprof"))
}
