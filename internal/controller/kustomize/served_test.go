package kustomize

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestCheckServed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kind       string
		kubeConfig *meta.KubeConfigReference
		wantReason string
		wantErr    string
	}{
		{name: "local cluster, GitRepository", kind: sourcev1.GitRepositoryKind},
		{name: "remote cluster by secretRef", kind: sourcev1.OCIRepositoryKind,
			kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kc"}}},
		{name: "remote cluster by configMapRef", kind: sourcev1.GitRepositoryKind,
			kubeConfig: &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}},
			wantReason: meta.UnsupportedKubeConfigReason, wantErr: "spec.kubeConfig.configMapRef (workload identity for remote clusters) is not served"},
		{name: "ExternalArtifact source", kind: "ExternalArtifact"},
		{name: "a source kind not served", kind: "HelmChart",
			wantReason: meta.UnsupportedSourceKindReason, wantErr: "source kind 'HelmChart' is not served by Windlass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: tc.kind, Name: "app"}, KubeConfig: tc.kubeConfig,
			}}
			err := checkServed(obj)
			testutil.ExpectStall(g, err, tc.wantReason, tc.wantErr)
		})
	}
}

// TestUnservedKubeConfigAppliesNothing: a Kustomization meant for a remote
// cluster through configMapRef (workload identity, not served) is Stalled at
// once, and nothing of its ready source lands on the local cluster. Both
// refs together are refused by the API server.
func TestUnservedKubeConfigAppliesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	testutil.WaitFor(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, func(r *sourcev1.GitRepository) bool {
		return r.Status.Artifact != nil
	})
	applyManifests(g, ns, kustomization("remote", "app", "  path: ./deploy\n  kubeConfig:\n    configMapRef:\n      name: cluster\n"))

	got := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "remote"}, ksReason("False", meta.UnsupportedKubeConfigReason))
	g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeTrue())
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("use spec.kubeConfig.secretRef"))
	g.Expect(got.Status.LastAttemptedRevision).To(BeEmpty(), "the source was not even read")
	g.Consistently(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, "2s", "200ms").Should(BeTrue(), "nothing is applied to the local cluster")
	g.Expect(dryRuns.In(ns)).To(BeZero(), "not even a dry run reached the local cluster")

	for name, kubeConfig := range map[string]string{
		"both":  "    secretRef:\n      name: kc\n    configMapRef:\n      name: cluster\n",
		"empty": "    {}\n",
	} {
		u := decodeManifests(g, kustomization(name, "app", "  path: ./deploy\n  kubeConfig:\n"+kubeConfig))[0]
		u.SetNamespace(ns)
		err := env.Client.Create(ctx, u)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring("exactly one of spec.kubeConfig.secretRef or spec.kubeConfig.configMapRef must be set"))
	}
}

// TestExternalArtifactSource: an ArtifactGenerator splits a monorepo into
// one ExternalArtifact per application, each applied by its own
// Kustomization, written as the reference's manifests are; a commit to one
// application's folder is applied by that application's Kustomization
// alone: the other is not written to, nor are its objects.
func TestExternalArtifactSource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "mono", map[string]string{
		"apps/a/cm.yaml": configMap(ns, "a", "1"), "apps/b/cm.yaml": configMap(ns, "b", "1"), "README.md": "mono\n",
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, `apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: apps
spec:
  sources:
    - alias: mono
      kind: GitRepository
      name: mono
  artifacts:
    - name: app-a
      originRevision: "@mono"
      copy:
        - from: "@mono/apps/a/**"
          to: "@artifact/"
    - name: app-b
      originRevision: "@mono"
      copy:
        - from: "@mono/apps/b/**"
          to: "@artifact/"
          exclude: ["*.md"]
`)
	for _, name := range []string{"a", "b"} {
		applyManifests(g, ns, strings.Replace(kustomization(name, "app-"+name, "  path: ./\n"), "kind: GitRepository", "kind: ExternalArtifact", 1))
	}
	a := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "a"}, ksReady(""))
	b := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "b"}, ksReady(""))
	g.Expect(a.Status.LastAppliedRevision).To(HavePrefix("latest@sha256:"))
	g.Expect(a.Status.LastAppliedOriginRevision).To(HavePrefix("main@sha1:"))
	cmB := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, cmB)).To(Succeed())

	repo.MustCommit(t, "main", map[string]string{"apps/a/cm.yaml": configMap(ns, "a", "2"), "README.md": "mono 2\n"}, "a: 2")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mono"}}, "a2")
	g.Eventually(func() string {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm)).To(Succeed())
		return cm.Data["value"]
	}, timeout, interval).Should(Equal("2"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "a"}, func(k *kustomizev1.Kustomization) bool {
		return ksReady("")(k) && k.Status.LastAppliedRevision != a.Status.LastAppliedRevision
	})
	gen := &sourceextv1beta1.ArtifactGenerator{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "apps"}, gen)).To(Succeed())
	g.Expect(conditions.IsTrue(gen, meta.ReadyCondition)).To(BeTrue())
	bNow := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), bNow)).To(Succeed())
	g.Expect(bNow.Status.LastAttemptedRevision).To(Equal(b.Status.LastAttemptedRevision), "b's artifact did not change: b did not run")
	g.Expect(bNow.Status.LastAppliedOriginRevision).To(Equal(b.Status.LastAppliedOriginRevision), "nor did its origin revision")
	cmBNow := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cmB), cmBNow)).To(Succeed())
	g.Expect(cmBNow.ResourceVersion).To(Equal(cmB.ResourceVersion))
}

// TestSwitchToUnservedKubeConfigLeavesObjects: a Kustomization that applied
// to the local cluster and is then pointed at a remote cluster through
// configMapRef stalls; deleting it does not hang on its finalizer (security.md
// row 23) and prunes nothing, since where the inventory now lives cannot be
// reached: the objects are left in place and a Warning says so.
func TestSwitchToUnservedKubeConfigLeavesObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	ready := waitForKs(g, key, ksReady(""))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())

	ready.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}}
	g.Expect(env.Client.Update(ctx, ready)).To(Succeed())
	waitForKs(g, key, func(k *kustomizev1.Kustomization) bool {
		return ksReason("False", meta.UnsupportedKubeConfigReason)(k) && k.Status.ObservedGeneration == k.Generation
	})

	g.Expect(env.Client.Delete(ctx, ready)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &kustomizev1.Kustomization{}))
	}, timeout, interval).Should(BeTrue(), "the finalizer lets it go")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed(), "nothing is pruned")
	g.Eventually(func() []string {
		return testutil.EventMessages(g, env.Client, ready, kustomizev1.KustomizationKind)
	}, timeout, interval).Should(ContainElement(ContainSubstring("the applied objects are left in place")))
}
