package e2e

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// A user applies a GitRepository and a Kustomization to the binary running
// every controller in one process: the manifests in Git land in the
// cluster, with a variable substituted.
func TestKustomization_AppliesFromGit(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	url, sha := servedRepo(t, "app.git", map[string]string{
		"deploy/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${app}-config\ndata:\n  greeting: hello\n",
	})
	applyGitRepository(g, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
  namespace: %s
spec:
  interval: 1m
  url: %s
  ref:
    branch: main
`, ns, url))
	ks := &kustomizev1.Kustomization{}
	g.Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: app
  namespace: %s
spec:
  interval: 5m
  path: ./deploy
  prune: true
  targetNamespace: %s
  sourceRef:
    kind: GitRepository
    name: app
  postBuild:
    substitute:
      app: shop
`, ns, ns)), ks)).To(Succeed())
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue(), conditions.Message(got, meta.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
	}, timeout, interval).Should(Succeed())
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop-config"}, &cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(cm.ManagedFields).To(ContainElement(HaveField("Manager", "kustomize-controller")))
}
