package kustomize

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestPostBuildSubstitution(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{
		"deploy/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${app}-config\n  namespace: " + ns +
			"\ndata:\n  env: ${env:=dev}\n  region: ${region}\n",
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, `apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-vars
data:
  region: eu-west-1
  app: wrong
---
`+kustomization("app", "app", "  path: ./deploy\n  postBuild:\n    substitute:\n      app: shop\n    substituteFrom:\n    - kind: ConfigMap\n      name: cluster-vars\n    - kind: Secret\n      name: optional-vars\n      optional: true\n"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "app"}, ksReady(""))
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop-config"}, &cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"env": "dev", "region": "eu-west-1"}))
}

// TestSubstitutionBombIsABuildError commits a template whose nested
// replacements grow tenfold per level (a few hundred bytes that would
// expand to gigabytes): the revision fails as a build error that names the
// limit, and the last applied revision stays applied.
func TestSubstitutionBombIsABuildError(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{
		"deploy/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: " + ns + "\ndata:\n  v: ${x}\n",
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  postBuild:\n    substitute:\n      x: aaaaaaaaaa\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	good := waitForKs(g, key, ksReady(""))

	bomb := "${x}"
	for range 12 {
		bomb = "${x//a/" + bomb + "}"
	}
	sha := repo.MustCommit(t, "main", map[string]string{
		"deploy/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: " + ns + "\ndata:\n  v: " + bomb + "\n",
	}, "bomb")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}, "bomb")
	got := waitForKs(g, key, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastAttemptedRevision == "main@sha1:"+sha && conditions.IsFalse(k, meta.ReadyCondition)
	})
	g.Expect(conditions.Reason(got, meta.ReadyCondition)).To(Equal(kustomizev1.BuildFailedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("substitution output too large"))
	g.Expect(got.Status.LastAppliedRevision).To(Equal(good.Status.LastAppliedRevision), "the last good revision stays applied")
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &cm)).To(Succeed())
	g.Expect(cm.Data["v"]).To(Equal(strings.Repeat("a", 10)))
}

// TestSubstitutionBoundsTheWholeBuild substitutes documents that each
// stay within the per-document limit but add up past the build's.
func TestSubstitutionBoundsTheWholeBuild(t *testing.T) {
	g := NewWithT(t)
	obj := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{PostBuild: &kustomizev1.PostBuild{
		Substitute: map[string]string{"big": strings.Repeat("b", 1<<20)},
	}}}
	doc := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: ${big}\n  b: ${big}\n")
	docs := [][]byte{doc, doc, doc, doc, doc, doc, doc, doc, doc}
	objs, err := substitutedObjects(obj, build.FromYAML(docs[:4]), obj.Spec.PostBuild.Substitute)
	g.Expect(err).NotTo(HaveOccurred(), "8 MiB of growth in all is allowed")
	g.Expect(objs).To(HaveLen(4))
	_, err = substitutedObjects(obj, build.FromYAML(docs), obj.Spec.PostBuild.Substitute)
	g.Expect(err).To(MatchError(ContainSubstring("in all")))
	g.Expect(outcome.ReasonOf(err, "")).To(Equal(kustomizev1.BuildFailedReason))
}

// TestSubstitutionErrorReasons: the errors of the shared post-build
// functions keep the controller's reasons and messages. A missing
// substituteFrom object is waited for, an optional one is not; an unset
// variable fails the substitution; output past the limits fails the build.
func TestSubstitutionErrorReasons(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	r := &KustomizationReconciler{Client: env.Client, DependencyRequeue: 7 * time.Second}
	ks := func(pb *kustomizev1.PostBuild) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app"), Spec: kustomizev1.KustomizationSpec{PostBuild: pb}}
	}
	from := func(optional bool) *kustomizev1.PostBuild {
		return &kustomizev1.PostBuild{Substitute: map[string]string{"a": "1"},
			SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "missing", Optional: optional}}}
	}

	t.Run("a required substituteFrom is waited for", func(t *testing.T) {
		g := NewWithT(t)
		_, err := r.substituteVars(ctx, ks(from(false)))
		var waiting *outcome.Waiting
		g.Expect(errors.As(err, &waiting)).To(BeTrue(), "%v", err)
		g.Expect(waiting.Reason).To(Equal(kustomizev1.SubstitutionFailedReason))
		g.Expect(waiting.RequeueAfter).To(Equal(7 * time.Second))
		g.Expect(err).To(MatchError("substitute from ConfigMap '" + ns + "/missing' not found"))
	})
	t.Run("an optional substituteFrom is not", func(t *testing.T) {
		g := NewWithT(t)
		vars, err := r.substituteVars(ctx, ks(from(true)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(vars).To(Equal(map[string]string{"a": "1"}))
	})
	t.Run("an unset variable fails the substitution", func(t *testing.T) {
		g := NewWithT(t)
		doc := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: ${unset}\n")
		_, err := substitutedObjects(ks(&kustomizev1.PostBuild{}), build.FromYAML([][]byte{doc}), map[string]string{"a": "1"})
		var failure *outcome.Failure
		g.Expect(errors.As(err, &failure)).To(BeTrue(), "%v", err)
		g.Expect(failure.Reason).To(Equal(kustomizev1.SubstitutionFailedReason))
		g.Expect(err).To(MatchError(HavePrefix("post-build substitution failed: ConfigMap/a: ")))
	})
}
