package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// A user splits a monorepo with the reference's own manifests, applied to
// the binary: a GitRepository, an ArtifactGenerator with a pathPattern, and
// a Kustomization per application of its ExternalArtifact; the objects land
// in the cluster, and the command line shows the generator, its artifacts
// and its tree.
func TestArtifactGenerator_SplitsAMonorepo(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	configMap := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  app: " + name + "\n"
	}
	url, _ := servedRepo(t, "mono.git", map[string]string{
		"apps/auth/cm.yaml": configMap("auth"), "apps/web/cm.yaml": configMap("web"), "README.md": "mono\n",
	})
	manifests := fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: mono
spec:
  interval: 1m
  url: %s
  ref:
    branch: main
---
apiVersion: source.extensions.fluxcd.io/v1beta1
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
      originRevision: "@mono"
      copy:
        - from: "@mono/apps/{app}/**"
          to: "@artifact/"
`, url)
	for _, app := range []string{"auth", "web"} {
		manifests += fmt.Sprintf(`---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %[1]s
spec:
  interval: 10m
  sourceRef:
    kind: ExternalArtifact
    name: %[1]s
  path: "./"
  prune: true
  targetNamespace: %[2]s
`, app, ns)
	}
	for _, doc := range strings.Split(manifests, "---\n") {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		u.SetNamespace(ns)
		g.Expect(env.Client.Create(ctx, u)).To(Succeed())
	}
	for _, app := range []string{"auth", "web"} {
		g.Eventually(func(g Gomega) {
			ks := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, ks)).To(Succeed())
			g.Expect(conditions.IsTrue(ks, meta.ReadyCondition)).To(BeTrue(), conditions.Message(ks, meta.ReadyCondition))
			g.Expect(ks.Status.LastAppliedRevision).To(HavePrefix("latest@sha256:"))
		}, timeout, interval).Should(Succeed())
		var cm corev1.ConfigMap
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, &cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("app", app))
	}

	out, errOut, code := runCLI(g, "get", "artifactgenerators", "-n", ns)
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(ContainSubstring("generated 2 artifact(s)"))
	out, errOut, code = runCLI(g, "get", "sources", "external", "-n", ns)
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(And(ContainSubstring("auth"), ContainSubstring("web"), ContainSubstring("latest@sha256:")))
	out, errOut, code = runCLI(g, "tree", "artifactgenerator", "apps", "-n", ns)
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(ContainSubstring("└── ExternalArtifact/" + ns + "/web\n    └── Kustomization/" + ns + "/web\n        └── ConfigMap/" + ns + "/web\n"))
	_, errOut, code = runCLI(g, "reconcile", "artifactgenerator", "apps", "-n", ns)
	g.Expect(code).To(Equal(0), errOut)
}
