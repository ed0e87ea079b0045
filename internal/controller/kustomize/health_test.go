package kustomize

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// stuckDeployment is a Deployment that never becomes available: there is
// no kubelet to run its pod.
func stuckDeployment(ns, name string) string {
	return strings.Replace(deployment(ns, name), "replicas: 0", "replicas: 1", 1)
}

// TestHealthChecksDoNotHoldWorkers waits for more unhealthy Kustomizations
// than the controller has workers: they are Ready=Unknown and in progress,
// and another Kustomization still becomes Ready. A wait that outlasts its
// timeout fails.
func TestHealthChecksDoNotHoldWorkers(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const stuck = 6 // the suite runs 4 workers
	for i := range stuck {
		name := "stuck-" + string(rune('a'+i))
		_, src := appRepo(t, name, map[string]string{"deploy/web.yaml": stuckDeployment(ns, name)})
		applyManifests(g, ns, src)
		applyManifests(g, ns, kustomization(name, name, "  path: ./deploy\n  wait: true\n  timeout: 10m\n"))
	}
	for i := range stuck {
		name := "stuck-" + string(rune('a'+i))
		got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: name}, ksReason("Unknown", meta.ProgressingReason))
		g.Expect(conditions.IsTrue(got, meta.ReconcilingCondition)).To(BeTrue())
		g.Expect(conditions.Get(got, meta.HealthyCondition).Status).To(BeEquivalentTo("Unknown"))
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("Deployment/" + ns + "/" + name))
		g.Expect(got.Status.LastAppliedRevision).NotTo(BeEmpty(), "the revision is applied; its health is awaited")
	}

	_, src := appRepo(t, "fine", map[string]string{"deploy/web.yaml": deployment(ns, "fine")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("fine", "fine", "  path: ./deploy\n  wait: true\n"))
	start := time.Now()
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "fine"}, ksReady(""))
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))

	_, src = appRepo(t, "late", map[string]string{"deploy/web.yaml": stuckDeployment(ns, "late")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("late", "late", "  path: ./deploy\n  wait: true\n  timeout: 2s\n"))
	got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "late"}, ksReason("False", kustomizev1.HealthCheckFailedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("timed out after 2s"))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("Deployment/" + ns + "/late"))
	g.Expect(conditions.Get(got, meta.HealthyCondition).Status).To(BeEquivalentTo("False"))
}

// TestNewRevisionDoesNotWaitForTheOldHealthCheck applies a Deployment that can never
// become available (there is no kubelet) with a long timeout, then fixes it
// in Git: the new revision must not wait for the old health check.
func TestNewRevisionDoesNotWaitForTheOldHealthCheck(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{"deploy/web.yaml": stuckDeployment(ns, "web")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  wait: true\n  timeout: 10m\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastAppliedRevision != "" && conditions.IsTrue(k, meta.ReconcilingCondition)
	})

	sha := repo.MustCommit(t, "main", map[string]string{"deploy/web.yaml": deployment(ns, "web")}, "scale to zero")
	start := time.Now()
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, "fix")
	got := waitForKs(g, key, ksReady("main@sha1:"+sha))
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Minute), "the old revision's health was not waited for until its timeout")
	g.Expect(conditions.IsTrue(got, meta.HealthyCondition)).To(BeTrue())
}

func TestHealthRecheckDelay(t *testing.T) {
	tests := []struct {
		elapsed, remaining, want time.Duration
	}{
		{0, time.Minute, minHealthRecheck + 10*time.Millisecond},
		{2 * time.Second, time.Minute, 2*time.Second + 10*time.Millisecond},
		{time.Minute, time.Hour, maxHealthRecheck + 10*time.Millisecond},
		{3 * time.Second, time.Second, time.Second + 10*time.Millisecond},
		{time.Second, -time.Second, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := healthRecheckDelay(tt.elapsed, tt.remaining); got != tt.want {
			t.Errorf("healthRecheckDelay(%s, %s) = %s, want %s", tt.elapsed, tt.remaining, got, tt.want)
		}
	}
}
