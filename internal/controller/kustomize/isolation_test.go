package kustomize

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/isolate"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// manyConfigMaps is a file of n ConfigMaps: kustomize's time grows with
// the square of n, and 20,000 take it far longer than any test.
func manyConfigMaps(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  k: v\n", i)
	}
	return b.String()
}

// Security row 43: a tenant's Kustomization whose build would take
// kustomize many minutes runs in a process of its own, ended by its
// spec.timeout with a clear error, while another tenant's Kustomization
// is built and applied meanwhile; the last good revision stays applied.
func TestLargeBuildRunsApartAndEndsAtItsTimeout(t *testing.T) {
	g := NewWithT(t)
	big, small := env.CreateNamespace(t), env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n"})
	applyManifests(g, big, src)
	// No retry within the test: one build of the large revision.
	applyManifests(g, big, strings.Replace(kustomization("app", "app", "  path: ./deploy\n  timeout: 20s\n  targetNamespace: "+big+"\n"),
		"retryInterval: 1s", "retryInterval: 1h", 1))
	key := client.ObjectKey{Namespace: big, Name: "app"}
	good := waitForKs(g, key, ksReady(""))

	sha := repo.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": manyConfigMaps(20000)}, "twenty thousand")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(big, "app")}, "large")
	g.Eventually(func() []int { return isolate.Running("kustomize-build") }, testutil.WaitTimeout).ShouldNot(BeEmpty())

	_, otherSrc := appRepo(t, "other", map[string]string{"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"})
	applyManifests(g, small, otherSrc)
	applyManifests(g, small, kustomization("other", "other", "  path: ./deploy\n  targetNamespace: "+small+"\n"))
	waitForKs(g, client.ObjectKey{Namespace: small, Name: "other"}, ksReady(""))
	g.Expect(isolate.Running("kustomize-build")).NotTo(BeEmpty(), "the large build still runs")

	got := waitForKs(g, key, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastAttemptedRevision == "main@sha1:"+sha && conditions.IsFalse(k, meta.ReadyCondition)
	})
	g.Expect(conditions.Reason(got, meta.ReadyCondition)).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal(
		`kustomize build of "deploy": the kustomize build did not end in time: context deadline exceeded (spec.timeout is 20s)`))
	g.Expect(got.Status.LastAppliedRevision).To(Equal(good.Status.LastAppliedRevision), "the last good revision stays applied")
	g.Eventually(func() []int { return isolate.Running("kustomize-build") }, testutil.WaitTimeout).Should(BeEmpty(), "no retry before retryInterval")
}
