package kustomize

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// deployment returns a Deployment manifest scaled to zero, which becomes
// Available without a kubelet.
func deployment(ns, name string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  namespace: ` + ns + `
spec:
  replicas: 0
  selector:
    matchLabels:
      app: ` + name + `
  template:
    metadata:
      labels:
        app: ` + name + `
    spec:
      containers:
      - name: app
        image: ghcr.io/example/` + name + `:1.0.0
`
}

func namespace(name string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n"
}

func configMap(ns, name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  value: \"" + value + "\"\n"
}

// applyManifests creates every object of a multi-document YAML in ns.
func applyManifests(g *WithT, ns string, manifests string) {
	for _, u := range decodeManifests(g, manifests) {
		u.SetNamespace(ns)
		g.Expect(env.Client.Create(context.Background(), u)).To(Succeed())
	}
}

// decodeManifests decodes the objects of a multi-document YAML.
func decodeManifests(g *WithT, manifests string) []*unstructured.Unstructured {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(manifests)), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		g.Expect(err).NotTo(HaveOccurred())
		objs = append(objs, u)
	}
}

// TestSeedExample runs the example of seed 001 as written, with its URLs
// pointed at loopback repositories: Istio, then webapp-common, backend and
// frontend, chained by dependsOn.
func TestSeedExample(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "gitops-istio.git", "master").MustCommit(t, "master", map[string]string{
		"istio/namespace.yaml": namespace("istio-system"),
		"istio/istiod.yaml":    deployment("istio-system", "istiod"),
	}, "istio")
	srv.MustInitRepo(t, "podinfo-deploy.git", "master").MustCommit(t, "master", map[string]string{
		"webapp/common/namespace.yaml":    namespace("webapp"),
		"webapp/backend/deployment.yaml":  deployment("webapp", "backend"),
		"webapp/frontend/deployment.yaml": deployment("webapp", "frontend"),
	}, "webapp")

	seed, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "internal", "testutil", "testenv", "testdata", "seed-001.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	manifests := strings.NewReplacer(
		"https://github.com/stefanprodan/gitops-istio", base+"/gitops-istio.git",
		"https://github.com/stefanprodan/podinfo-deploy", base+"/podinfo-deploy.git",
	).Replace(string(seed))
	// Hold Istio's source back, to see its dependents wait for it.
	manifests = strings.Replace(manifests, "  interval: 5m\n  url: "+base+"/gitops-istio.git", "  suspend: true\n  interval: 5m\n  url: "+base+"/gitops-istio.git", 1)
	applyManifests(g, ns, manifests)

	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	for _, name := range []string{"webapp-common", "webapp-backend", "webapp-frontend"} {
		waitForKs(g, key(name), ksReason("False", meta.DependencyNotReadyReason))
	}
	var backend appsv1.Deployment
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: "webapp", Name: "backend"}, &backend))).To(BeTrue(),
		"nothing is applied before its dependencies are ready")

	g.Expect(env.Client.Patch(ctx, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "istio")},
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
	for _, name := range []string{"istio", "webapp-common", "webapp-backend", "webapp-frontend"} {
		got := waitForKs(g, key(name), ksReady(""))
		g.Expect(got.Status.LastAppliedRevision).To(HavePrefix("master@sha1:"))
		g.Expect(got.Status.Inventory.Entries).NotTo(BeEmpty())
	}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "webapp", Name: "backend"}, &backend)).To(Succeed())
	g.Expect(backend.Labels).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", "webapp-backend"))
	g.Expect(backend.Labels).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/namespace", ns))
	istio := waitForKs(g, key("istio"), ksReady(""))
	g.Expect(conditions.IsTrue(istio, meta.HealthyCondition)).To(BeTrue())
}

func TestPruneAndDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	repo.MustCommit(t, "main", map[string]string{
		"deploy/a.yaml": configMap(ns, "a", "1"),
		"deploy/b.yaml": configMap(ns, "b", "1"),
	}, "two configmaps")

	created, deleted := appliedObjects(metrics.ActionCreated), appliedObjects(metrics.ActionDeleted)
	applyManifests(g, ns, `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 10m
  url: `+base+`/app.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: app
spec:
  interval: 10m
  path: ./deploy
  prune: true
  sourceRef:
    kind: GitRepository
    name: app
`)
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	got := waitForKs(g, key, ksReady(""))
	g.Expect(got.Status.Inventory.Entries).To(ConsistOf(
		kustomizev1.ResourceRef{ID: ns + "_a__ConfigMap", Version: "v1"},
		kustomizev1.ResourceRef{ID: ns + "_b__ConfigMap", Version: "v1"},
	))
	g.Expect(appliedObjects(metrics.ActionCreated)).To(BeNumerically(">=", created+2), "the first apply counts what it created")

	// Removing a file from the repository prunes its object.
	sha, err := repo.Remove("main", []string{"deploy/b.yaml"}, "drop b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Patch(ctx, &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")},
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+meta.ReconcileRequestAnnotation+`":"drop-b"}}}`)))).To(Succeed())
	got = waitForKs(g, key, ksReady("main@sha1:"+sha))
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1))
	g.Expect(appliedObjects(metrics.ActionDeleted)).To(BeNumerically(">=", deleted+1), "the prune counts what it deleted")
	deleted = appliedObjects(metrics.ActionDeleted)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, &corev1.ConfigMap{}))
	}, timeout, interval).Should(BeTrue())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})).To(Succeed())

	// Deleting the Kustomization removes what it applied.
	g.Expect(env.Client.Delete(ctx, got)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &corev1.ConfigMap{})) &&
			apierrors.IsNotFound(env.Client.Get(ctx, key, &kustomizev1.Kustomization{}))
	}, timeout, interval).Should(BeTrue())
	g.Expect(appliedObjects(metrics.ActionDeleted)).To(BeNumerically(">=", deleted+1), "the deletion counts what it deleted")
}
