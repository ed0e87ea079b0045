package kustomize

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// appRepo serves a repository with files and returns its GitRepository
// manifest, named name.
func appRepo(t *testing.T, name string, files map[string]string) (*gitserver.Repo, string) {
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, name+".git", "main")
	repo.MustCommit(t, "main", files, "initial")
	return repo, `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: ` + name + `
spec:
  interval: 10m
  url: ` + base + `/` + name + `.git
  ref:
    branch: main
`
}

// readyApp applies, in a new namespace, a Kustomization "app" of ./deploy
// from a repository holding one ConfigMap "a", and waits until it is Ready:
// it returns the namespace, the repository, the Kustomization's key and
// the Ready Kustomization.
func readyApp(t *testing.T, g *WithT) (string, *gitserver.Repo, client.ObjectKey, *kustomizev1.Kustomization) {
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	return ns, repo, key, waitForKs(g, key, ksReady(""))
}

// kustomization returns a Kustomization manifest for source src with extra
// spec lines.
func kustomization(name, src, extra string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
spec:
  interval: 10m
  retryInterval: 1s
  prune: true
  sourceRef:
    kind: GitRepository
    name: ` + src + `
` + extra
}

func TestFaults_InvalidSpecStalls(t *testing.T) {
	ns := env.CreateNamespace(t)
	g := NewWithT(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	tests := []struct {
		name, extra, reason, message string
	}{
		{"path out of the root", "  path: ../../etc\n", meta.InvalidPathReason, "leaves the source's root"},
		{"invalid health expression", "  path: ./deploy\n  wait: true\n  healthCheckExprs:\n  - apiVersion: v1\n    kind: ConfigMap\n    current: \"status.(\"\n", meta.InvalidCELExpressionReason, ""},
		{"invalid readyExpr", "  path: ./deploy\n  dependsOn:\n  - name: other\n    readyExpr: \"dep.(\"\n", meta.InvalidCELExpressionReason, "readyExpr"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name := fmt.Sprintf("stall-%d", i)
			applyManifests(g, ns, kustomization(name, "app", tt.extra))
			if tt.name == "invalid readyExpr" {
				applyManifests(g, ns, kustomization("other", "app", "  path: ./deploy\n"))
			}
			got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: name}, func(k *kustomizev1.Kustomization) bool {
				return conditions.IsTrue(k, meta.StalledCondition)
			})
			g.Expect(conditions.Reason(got, meta.StalledCondition)).To(Equal(tt.reason))
			g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring(tt.message))
		})
	}
}

func TestFaults_DependencyCycleIsReported(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("a", "app", "  path: ./deploy\n  dependsOn:\n  - name: b\n"))
	applyManifests(g, ns, kustomization("b", "app", "  path: ./deploy\n  dependsOn:\n  - name: a\n"))
	got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "a"}, func(k *kustomizev1.Kustomization) bool {
		return conditions.IsTrue(k, meta.StalledCondition)
	})
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal(fmt.Sprintf("dependency cycle: %s/a -> %s/b -> %s/a", ns, ns, ns)))
}

func TestFaults_MissingSourceWaits(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	applyManifests(g, ns, kustomization("app", "nowhere", "  path: ./deploy\n"))
	got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "app"}, ksReason("False", kustomizev1.ArtifactFailedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("source GitRepository '" + ns + "/nowhere' not found"))
	g.Expect(conditions.IsTrue(got, meta.ReconcilingCondition)).To(BeTrue())
}

// TestFaults_BadRevisionKeepsLastAppliedState breaks the source in two ways
// (a build error, then an object the API server refuses) and checks that
// nothing of the bad revision is applied and nothing is pruned.
func TestFaults_BadRevisionKeepsLastAppliedState(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{
		"deploy/a.yaml": configMap(ns, "a", "1"),
		"deploy/b.yaml": configMap(ns, "b", "1"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	good := waitForKs(g, key, ksReady(""))

	steps := []struct {
		name   string
		files  map[string]string
		reason string
	}{
		{"build error", map[string]string{"deploy/kustomization.yaml": "resources: [a.yaml, missing.yaml]\n"}, kustomizev1.BuildFailedReason},
		{"invalid object", map[string]string{
			"deploy/kustomization.yaml": "resources: [a.yaml, bad.yaml]\n",
			"deploy/a.yaml":             configMap(ns, "a", "2"),
			"deploy/bad.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_Valid\n  namespace: " + ns + "\n",
		}, kustomizev1.ValidationFailedReason},
	}
	for i, step := range steps {
		sha := repo.MustCommit(t, "main", step.files, step.name)
		testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, fmt.Sprintf("step-%d", i))
		got := waitForKs(g, key, func(k *kustomizev1.Kustomization) bool {
			return k.Status.LastAttemptedRevision == "main@sha1:"+sha && conditions.Reason(k, meta.ReadyCondition) == step.reason
		})
		g.Expect(got.Status.LastAppliedRevision).To(Equal(good.Status.LastAppliedRevision), step.name)
		g.Expect(got.Status.Inventory).To(Equal(good.Status.Inventory), step.name)
		var a, b corev1.ConfigMap
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &a)).To(Succeed())
		g.Expect(a.Data["value"]).To(Equal("1"), "nothing of a bad revision is applied")
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, &b)).To(Succeed(), "nothing is pruned")
	}
}

func TestDriftIsCorrected(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, ksReady(""))

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm)).To(Succeed())
	cm.Data["value"] = "edited by hand"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

	drift, configured := driftCorrected(), appliedObjects(metrics.ActionConfigured)
	testutil.RequestReconcile(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}, "drift")
	g.Eventually(func() string {
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm)
		return cm.Data["value"]
	}, timeout, interval).Should(Equal("1"))
	waitForKs(g, key, func(k *kustomizev1.Kustomization) bool { return k.Status.LastHandledReconcileAt == "drift" })
	g.Expect(driftCorrected()).To(BeNumerically(">=", drift+1), "the correction counts as drift corrected")
	g.Expect(appliedObjects(metrics.ActionConfigured)).To(BeNumerically(">=", configured+1), "and as configured")
}

func TestSuspendedDeletionKeepsObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, key, got := readyApp(t, g)

	g.Expect(env.Client.Patch(ctx, got, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
	g.Expect(env.Client.Delete(ctx, got)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &kustomizev1.Kustomization{}))
	}, timeout, interval).Should(BeTrue())
	g.Consistently(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})
	}, 2*time.Second, interval).Should(Succeed(), "a suspended Kustomization deletes nothing")
}

// TestFaults_EmptySourcePrunesNothingUnlessAllowed empties the source (as
// a force-push of an empty branch would): nothing is pruned until the
// Kustomization allows it.
func TestFaults_EmptySourcePrunesNothingUnlessAllowed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, ksReady(""))

	sha := repo.MustCommit(t, "main", map[string]string{"deploy/kustomization.yaml": "resources: []\n"}, "empty")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, "empty")
	got := waitForKs(g, key, ksReason("False", kustomizev1.EmptySourceReason))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + sha))
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())

	g.Expect(env.Client.Patch(ctx, got, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+kustomizev1.AllowEmptyAnnotation+`":"true","`+meta.ReconcileRequestAnnotation+`":"allow"}}}`)))).To(Succeed())
	got = waitForKs(g, key, ksReady("main@sha1:"+sha))
	g.Expect(got.Status.Inventory.Entries).To(BeEmpty())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{}))
	}, timeout, interval).Should(BeTrue())
}
