package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// runCLI runs the windlass binary with args against the test control plane
// and returns its output and exit code.
func runCLI(g *WithT, args ...string) (stdout, stderr string, code int) {
	return runCLIAgainst(g, kubeconfig, args...)
}

// runCLIAgainst runs the windlass binary with args against the cluster of
// the kubeconfig kc.
func runCLIAgainst(g *WithT, kc string, args ...string) (stdout, stderr string, code int) {
	return runWindlass(g, cliEnv{}, append(args, "--kubeconfig", kc)...)
}

// TestCLI_ExitCodes: the binary's exit codes are scriptable: `diff` exits 0
// when nothing would change, 1 (and no error line) when something would,
// 2 when it cannot tell; a bad command is a one-line error with exit 1.
func TestCLI_ExitCodes(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	config := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: %s\n"
	url, sha := servedRepo(t, "app.git", map[string]string{"deploy/config.yaml": fmt.Sprintf(config, "hello")})
	applyGitRepository(g, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: %s}
spec: {interval: 1m, url: %s, ref: {branch: main}}
`, ns, url))
	ks := &kustomizev1.Kustomization{}
	g.Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec: {interval: 5m, path: ./deploy, prune: true, targetNamespace: %s, sourceRef: {kind: GitRepository, name: app}}
`, ns, ns)), ks)).To(Succeed())
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
	}, timeout, interval).Should(Succeed())

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "config.yaml"), fmt.Appendf(nil, config, "hello"), 0o644)).To(Succeed())
	out, errOut, code := runCLI(g, "diff", "kustomization", "app", "-n", ns, "--path", dir)
	g.Expect(code).To(Equal(0), out+errOut)
	g.Expect(out + errOut).To(BeEmpty())

	g.Expect(os.WriteFile(filepath.Join(dir, "config.yaml"), fmt.Appendf(nil, config, "bonjour"), 0o644)).To(Succeed())
	out, errOut, code = runCLI(g, "diff", "kustomization", "app", "-n", ns, "--path", dir)
	g.Expect(code).To(Equal(1), out+errOut)
	g.Expect(out).To(ContainSubstring("► ConfigMap/" + ns + "/settings drifted"))
	g.Expect(out).To(ContainSubstring("+  greeting: bonjour"))
	g.Expect(errOut).To(BeEmpty())

	_, errOut, code = runCLI(g, "diff", "kustomization", "missing", "-n", ns, "--path", dir)
	g.Expect(code).To(Equal(2), errOut)
	g.Expect(strings.Count(errOut, "\n")).To(Equal(1), errOut)
	g.Expect(errOut).To(HavePrefix("error: "))

	_, errOut, code = runCLI(g, "get", "widgets")
	g.Expect(code).To(Equal(1))
	g.Expect(errOut).To(Equal("error: unknown kind \"widgets\" for \"windlass get\": choose one of alert, alert-provider, all, artifactgenerator, gate, helmrelease, images, kustomization, receiver, shards, sources (see windlass get --help)\n"))
}

// TestCLI_MissingCRDs: in a cluster without the Windlass CRDs, `get` says
// so in one line and what to check, and `check` fails on the CRD.
func TestCLI_MissingCRDs(t *testing.T) {
	g := NewWithT(t)
	cp, kc := privateControlPlane(t, g)
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kustomizations.kustomize.toolkit.fluxcd.io"}}
	g.Expect(cp.Client.Delete(context.Background(), crd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), crd))
	}, timeout, interval).Should(BeTrue())

	_, errOut, code := runCLIAgainst(g, kc, "get", "kustomizations")
	g.Expect(code).To(Equal(1))
	g.Expect(strings.Count(errOut, "\n")).To(Equal(1), errOut)
	g.Expect(errOut).To(ContainSubstring("listing Kustomizations"))
	g.Expect(errOut).To(ContainSubstring("are the Windlass CRDs installed in this cluster?"))

	out, _, code := runCLIAgainst(g, kc, "check")
	g.Expect(code).NotTo(Equal(0))
	g.Expect(out).To(MatchRegexp(`✗ .*kustomizations\.kustomize\.toolkit\.fluxcd\.io`))
}
