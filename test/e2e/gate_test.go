package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// TestGate_SREApprovalWindow is RFC story 1 with the real binary and the
// real command line: a Kustomization behind a gate closed by default
// applies nothing; `windlass gate open` lets its commit through within
// seconds (the watch, not the hour-long interval); `windlass gate close`
// holds the next commit back, while the applied state stays applied.
func TestGate_SREApprovalWindow(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	app := newGatedApp(t, g, ns, "sre-approval", "closed", "kustomize.toolkit.fluxcd.io/v1beta1", "my-app")
	first, repo, value := app.first, app.repo, app.value
	key := client.ObjectKey{Namespace: ns, Name: "my-app"}
	approved := func() string {
		var ks kustomizev1.Kustomization
		if err := env.Client.Get(ctx, key, &ks); err != nil {
			return err.Error()
		}
		c := conditions.Get(&ks, meta.ApprovedCondition)
		if c == nil {
			return "none"
		}
		return string(c.Status) + ": " + c.Message
	}
	g.Eventually(approved, timeout, interval).Should(Equal(
		"False: Reconciliation is waiting approval, gate '" + ns + "/sre-approval' is closed."))
	g.Consistently(value, 2*time.Second, interval).Should(Equal("<none>"), "nothing applied behind a closed gate")

	opened := time.Now()
	out, errOut, code := runCLI(g, "gate", "open", "sre-approval", "-n", ns, "--timeout", "1m")
	g.Expect(code).To(Equal(0), out+errOut)
	g.Expect(out).To(ContainSubstring("Gate scheduled for closing at"))
	g.Eventually(value, 20*time.Second, interval).Should(Equal("1"))
	t.Logf("applied %.1fs after `windlass gate open` started", time.Since(opened).Seconds())
	// The objects are applied before the status that says so is written.
	g.Eventually(approved, timeout, interval).Should(HavePrefix("True: "))
	var ks kustomizev1.Kustomization
	g.Expect(env.Client.Get(ctx, key, &ks)).To(Succeed())
	g.Expect(ks.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))

	out, errOut, code = runCLI(g, "gate", "close", "sre-approval", "-n", ns, "--timeout", "1m")
	g.Expect(code).To(Equal(0), out+errOut)
	g.Eventually(approved, timeout, interval).Should(HavePrefix("False: "))
	repo.MustCommit(t, "main", configMapFiles("2"), "two")
	_, errOut, code = runCLI(g, "reconcile", "source", "git", "app", "-n", ns, "--timeout", "1m")
	g.Expect(code).To(Equal(0), errOut)
	g.Consistently(value, 3*time.Second, interval).Should(Equal("1"), "the next commit is held back")

	var gate gatingv1alpha1.Gate
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sre-approval"}, &gate)).To(Succeed())
	g.Expect(gate.IsOpened()).To(BeFalse())
	out, _, code = runCLI(g, "gate", "status", "sre-approval", "-n", ns)
	g.Expect(code).To(Equal(0))
	g.Expect(out).To(ContainSubstring("Kustomization"))
	g.Expect(out).To(ContainSubstring("my-app"))
}

// gatedApp is a Git repository of one ConfigMap (its first commit has
// v: "1"), a GitRepository of it and a Kustomization that applies it
// behind a gate, in one namespace.
type gatedApp struct {
	ns    string
	repo  *gitserver.Repo
	first string
}

// newGatedApp serves the repository and creates the gate (open or closed
// by default), the GitRepository "app" and the Kustomization name of
// apiVersion behind the gate, in ns.
func newGatedApp(t *testing.T, g *WithT, ns, gateName, gateDefault, apiVersion, name string) *gatedApp {
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	app := &gatedApp{ns: ns, repo: srv.MustInitRepo(t, "app.git", "main")}
	app.first = app.repo.MustCommit(t, "main", configMapFiles("1"), "one")
	for _, manifest := range []string{`
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: %[3]s, namespace: %[1]s}
spec: {interval: 1h, default: %[4]s, window: 1h}`, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: %[1]s}
spec: {interval: 1h, url: %[2]s/app.git, ref: {branch: main}}`, `
apiVersion: %[5]s
kind: Kustomization
metadata: {name: %[6]s, namespace: %[1]s}
spec:
  interval: 1h
  path: ./deploy
  prune: true
  targetNamespace: %[1]s
  sourceRef: {kind: GitRepository, name: app}
  gates: [{name: %[3]s}]`} {
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(fmt.Sprintf(manifest, ns, base, gateName, gateDefault, apiVersion, name)), &obj.Object)).To(Succeed())
		g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	}
	return app
}

// configMapFiles are the files of a commit of a gatedApp: its ConfigMap
// with v.
func configMapFiles(v string) map[string]string {
	return map[string]string{"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: \"" + v + "\"\n"}
}

// value returns the ConfigMap's v, or "<none>" while it is not there.
func (a *gatedApp) value() string {
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: "app"}, &cm); err != nil {
		return "<none>"
	}
	return cm.Data["v"]
}
