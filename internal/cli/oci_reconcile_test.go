package cli

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestOCIPushReconcileApply is the path of an artifact from `windlass
// push artifact` to the cluster: an OCIRepository pulls it, a
// Kustomization applies it, and `reconcile ks --with-source` brings a new
// push in at once, with the origin revision recorded.
func TestOCIPushReconcileApply(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	host := testutil.StartRegistry(t, "", "")
	configMap := func(v string) map[string]string {
		return map[string]string{"deploy/cm.yaml": fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\ndata:\n  v: %q\n", ns, v)}
	}
	pushArtifact := func(v, revision string) {
		out, _, err := runArtifact(t, "push", "artifact", "oci://"+host+"/app:latest", "--path", testutil.WriteTree(t, configMap(v)),
			"--source", "https://git.example.com/app", "--revision", revision, "--insecure-registry")
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	pushArtifact("1", "main@sha1:1111111111111111111111111111111111111111")
	createFromYAML(g, &sourcev1.OCIRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: app, namespace: %s}
spec: {interval: 1h, url: "oci://%s/app", insecure: true}
`, ns, host))
	createFromYAML(g, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec: {interval: 1h, path: ./deploy, prune: true, sourceRef: {kind: OCIRepository, name: app}}
`, ns))
	out, _, err := run(t, "reconcile", "ks", "app", "-n", ns, "--with-source", "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("✔ OCIRepository " + ns + "/app reconciled: stored artifact for revision 'latest@sha256:"))

	pushArtifact("2", "main@sha1:2222222222222222222222222222222222222222")
	out, _, err = run(t, "reconcile", "source", "oci", "app", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, _, err = run(t, "reconcile", "ks", "app", "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	g.Expect(cm.Data["v"]).To(Equal("2"), "the new push is applied")
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, ks)).To(Succeed())
	g.Expect(ks.Status.LastAppliedOriginRevision).To(Equal("main@sha1:2222222222222222222222222222222222222222"))
	g.Expect(ks.Status.LastAppliedRevision).To(HavePrefix("latest@sha256:"))

	out, _, err = run(t, "trace", "configmap", "app", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`(?m)^URL:\s+oci://` + regexp.QuoteMeta(host) + `/app$`))
	g.Expect(out).To(MatchRegexp(`(?m)^Origin:\s+main@sha1:2222222222222222222222222222222222222222$`))
}
