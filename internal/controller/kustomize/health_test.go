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
)

// TestNewRevisionCancelsHealthCheck applies a Deployment that can never
// become available (there is no kubelet) with a long timeout, then fixes it
// in Git: the new revision must not wait for the old health check.
func TestNewRevisionCancelsHealthCheck(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	stuck := strings.Replace(deployment(ns, "web"), "replicas: 0", "replicas: 1", 1)
	repo, src := appRepo(t, "app", map[string]string{"deploy/web.yaml": stuck})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  wait: true\n  timeout: 10m\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastAppliedRevision != "" && conditions.IsTrue(k, meta.ReconcilingCondition)
	})

	sha := repo.MustCommit(t, "main", map[string]string{"deploy/web.yaml": deployment(ns, "web")}, "scale to zero")
	start := time.Now()
	requestReconcile(g, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, "fix")
	got := waitForKs(g, key, ksReady("main@sha1:"+sha))
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Minute), "the old wait was cancelled, not timed out")
	g.Expect(conditions.IsTrue(got, meta.HealthyCondition)).To(BeTrue())
}
