package kustomize

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestDeletedRepositoryPrunesNothing deletes the Git repository after a
// successful apply: the GitRepository reports FetchFailed and keeps its
// last artifact, and the Kustomization, reconciled again, stays Ready at
// the last revision with every object applied: nothing is pruned because
// the source went away.
func TestDeletedRepositoryPrunesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, repo, key, applied := readyApp(t, g)

	g.Expect(os.RemoveAll(repo.Path())).To(Succeed())
	source := &sourcev1.GitRepository{}
	source.Namespace, source.Name = ns, "app"
	testutil.RequestReconcile(g, env.Client, source, "deleted")
	failed := testutil.WaitFor(g, env.Client, source, func(s *sourcev1.GitRepository) bool {
		return conditions.IsTrue(s, sourcev1.FetchFailedCondition)
	})
	g.Expect(failed.Status.Artifact).NotTo(BeNil(), "the last artifact stays")
	g.Expect(failed.Status.Artifact.Revision).To(Equal(applied.Status.LastAppliedRevision))

	testutil.RequestReconcile(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}, "after-delete")
	waitForKs(g, key, func(k *kustomizev1.Kustomization) bool { return k.Status.LastHandledReconcileAt == "after-delete" })
	g.Consistently(func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, k)).To(Succeed())
		g.Expect(conditions.IsTrue(k, meta.ReadyCondition)).To(BeTrue())
		g.Expect(k.Status.LastAppliedRevision).To(Equal(applied.Status.LastAppliedRevision))
		g.Expect(k.Status.Inventory).To(Equal(applied.Status.Inventory))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())
	}, 2*time.Second, interval).Should(Succeed())
}
