package kustomize

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// waitForGenerator waits until the generator ns/name is Ready for its
// generation with count artifacts, and returns it.
func waitForGenerator(g *WithT, ns, name string, count int) *sourceextv1beta1.ArtifactGenerator {
	return testutil.WaitFor(g, env.Client, &sourceextv1beta1.ArtifactGenerator{ObjectMeta: objectMeta(ns, name)},
		func(o *sourceextv1beta1.ArtifactGenerator) bool {
			return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation && len(o.Status.Inventory) == count
		})
}

// valueOf returns the value of the ConfigMap ns/name, "" when it cannot
// be read.
func valueOf(ns, name string) string {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return ""
	}
	return cm.Data["value"]
}

// TestMonorepoOfAHundredApps: a monorepo of 100 application folders,
// decomposed by one ArtifactGenerator (pathPattern) into 100
// ExternalArtifacts, each applied by its own Kustomization; a commit to one
// folder changes that folder's artifact only, and exactly one Kustomization
// runs: the 99 others do not run at all (so make no API request), and
// nothing of theirs is written.
func TestMonorepoOfAHundredApps(t *testing.T) {
	const apps = 100
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	files := map[string]string{"README.md": "mono\n"}
	for i := range apps {
		name := fmt.Sprintf("app-%03d", i)
		files["apps/"+name+"/cm.yaml"] = configMap(ns, name, "1")
	}
	repo, src := appRepo(t, "mono", files)
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
  pathPattern: "@mono/apps/{app}"
  artifacts:
    - name: "{app}"
      copy:
        - from: "@mono/apps/{app}/**"
          to: "@artifact/"
`)
	waitForGenerator(g, ns, "apps", apps)
	var manifests []string
	for i := range apps {
		name := fmt.Sprintf("app-%03d", i)
		manifests = append(manifests, strings.Replace(kustomization(name, name, "  path: ./\n"), "kind: GitRepository", "kind: ExternalArtifact", 1))
	}
	applyManifests(g, ns, strings.Join(manifests, "---\n"))
	before := map[string]*kustomizev1.Kustomization{}
	for i := range apps {
		name := fmt.Sprintf("app-%03d", i)
		before[name] = waitForKs(g, client.ObjectKey{Namespace: ns, Name: name}, ksReady(""))
	}
	runs := map[string]uint64{}
	for name := range before {
		runs[name] = metrics.Runs(kustomizev1.KustomizationKind, client.ObjectKey{Namespace: ns, Name: name})
	}
	artifacts := externalArtifactDigests(g, ns)
	g.Expect(artifacts).To(HaveLen(apps))

	repo.MustCommit(t, "main", map[string]string{"apps/app-042/cm.yaml": configMap(ns, "app-042", "2")}, "app-042: 2")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mono"}}, "42")
	g.Eventually(func() string { return valueOf(ns, "app-042") }, timeout, interval).Should(Equal("2"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "app-042"}, func(k *kustomizev1.Kustomization) bool {
		return ksReady("")(k) && k.Status.LastAppliedRevision != before["app-042"].Status.LastAppliedRevision
	})
	waitForGenerator(g, ns, "apps", apps)

	changed := externalArtifactDigests(g, ns)
	for name, digest := range artifacts {
		if name == "app-042" {
			g.Expect(changed[name]).NotTo(Equal(digest), "the folder committed to has a new artifact")
			continue
		}
		g.Expect(changed[name]).To(Equal(digest), "%s: the other folders keep their artifact", name)
	}
	for name, ks := range before {
		key := client.ObjectKey{Namespace: ns, Name: name}
		now := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, now)).To(Succeed())
		if name == "app-042" {
			g.Expect(metrics.Runs(kustomizev1.KustomizationKind, key)).To(BeNumerically(">", runs[name]))
			continue
		}
		g.Expect(metrics.Runs(kustomizev1.KustomizationKind, key)).To(Equal(runs[name]), "%s did not run", name)
		g.Expect(now.ResourceVersion).To(Equal(ks.ResourceVersion), "%s was not written", name)
	}
}

// externalArtifactDigests returns the digests of the artifacts of the
// ExternalArtifacts of ns, by name.
func externalArtifactDigests(g *WithT, ns string) map[string]string {
	list := &sourcev1.ExternalArtifactList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, ea := range list.Items {
		if ea.Status.Artifact != nil {
			out[ea.Name] = ea.Status.Artifact.Digest
		}
	}
	return out
}

// TestComposedFromThreeSources: an artifact composed by a generator from
// three repositories (the manifests of one, the settings of another, the
// kustomization.yaml of a third) is applied by one Kustomization; a commit
// to any of them is applied.
func TestComposedFromThreeSources(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	_, manifests := appRepo(t, "manifests", map[string]string{"deploy/web.yaml": configMap(ns, "web", "1")})
	settingsRepo, settings := appRepo(t, "settings", map[string]string{"prod/settings.yaml": configMap(ns, "settings", "a")})
	_, overlay := appRepo(t, "overlay", map[string]string{"prod/kustomization.yaml": "resources:\n  - web.yaml\n  - settings.yaml\n"})
	applyManifests(g, ns, manifests+"---\n"+settings+"---\n"+overlay)
	applyManifests(g, ns, `apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: web
spec:
  sources:
    - {alias: manifests, kind: GitRepository, name: manifests}
    - {alias: settings, kind: GitRepository, name: settings}
    - {alias: overlay, kind: GitRepository, name: overlay}
  artifacts:
    - name: web-prod
      copy:
        - {from: "@manifests/deploy/web.yaml", to: "@artifact/web.yaml"}
        - {from: "@settings/prod/settings.yaml", to: "@artifact/settings.yaml"}
        - {from: "@overlay/prod/kustomization.yaml", to: "@artifact/kustomization.yaml"}
`)
	applyManifests(g, ns, strings.Replace(kustomization("web", "web-prod", "  path: ./\n"), "kind: GitRepository", "kind: ExternalArtifact", 1))
	first := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "web"}, ksReady(""))
	g.Expect(valueOf(ns, "web")).To(Equal("1"))
	g.Expect(valueOf(ns, "settings")).To(Equal("a"))

	settingsRepo.MustCommit(t, "main", map[string]string{"prod/settings.yaml": configMap(ns, "settings", "b")}, "b")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}, "b")
	g.Eventually(func() string { return valueOf(ns, "settings") }, timeout, interval).Should(Equal("b"))
	waitForKs(g, client.ObjectKey{Namespace: ns, Name: "web"}, func(k *kustomizev1.Kustomization) bool {
		return ksReady("")(k) && k.Status.LastAppliedRevision != first.Status.LastAppliedRevision
	})
}
