package cli

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// started is a command running in the background.
type started struct {
	out *testutil.LockedBuffer
	// done receives the command's error; finished is closed after.
	done     chan error
	finished chan struct{}
}

// start runs the command args in the background, its output readable
// while it runs; it is stopped when the test ends.
func start(t *testing.T, args ...string) *started {
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{out: &testutil.LockedBuffer{}, done: make(chan error, 1), finished: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		<-s.finished
	})
	root := NewRootCommand(s.out, s.out)
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	go func() {
		s.done <- root.ExecuteContext(ctx)
		close(s.finished)
	}()
	return s
}

// appWithSource creates, in ns, the GitRepository app of a served
// repository (suspended, so that it has no artifact yet, when suspended is
// set) and the Kustomization app that applies its ConfigMap, behind the
// gates named.
func appWithSource(t *testing.T, g *WithT, ns string, suspended bool, gates ...string) string {
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\n", ns)}, "one")
	createFromYAML(g, &sourcev1.GitRepository{}, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: %s}
spec: {interval: 1h, suspend: %t, url: %s/app.git, ref: {branch: main}}
`, ns, suspended, base))
	refs := ""
	for _, name := range gates {
		refs += fmt.Sprintf("{name: %s},", name)
	}
	createFromYAML(g, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: %s}
spec: {interval: 1h, path: ./deploy, prune: true, sourceRef: {kind: GitRepository, name: app}, gates: [%s]}
`, ns, refs))
	return sha
}

// TestReconcileWaitsForTheSourceArtifact: a Kustomization whose source has
// no artifact yet is waiting, not failed: `reconcile` says what it waits
// for and goes on waiting, and succeeds once the source has an artifact.
func TestReconcileWaitsForTheSourceArtifact(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	sha := appWithSource(t, g, ns, true)

	cmd := start(t, "reconcile", "ks", "app", "-n", ns, "--timeout", "2m")
	g.Eventually(cmd.out.String, time.Minute).Should(ContainSubstring(
		fmt.Sprintf("◎ Kustomization %s/app waits: source GitRepository '%s/app' has no artifact yet", ns, ns)))
	g.Consistently(cmd.done, 2*pollInterval).ShouldNot(Receive(), "a wait is not a failure")

	source := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, source)).To(Succeed())
	g.Expect(env.Client.Patch(ctx, source, client.RawPatch(client.Merge.Type(), []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())

	var err error
	g.Eventually(cmd.done, time.Minute).Should(Receive(&err))
	g.Expect(err).NotTo(HaveOccurred(), cmd.out.String())
	g.Expect(cmd.out.String()).To(ContainSubstring("✔ Kustomization " + ns + "/app reconciled: Applied revision: main@sha1:" + sha))
}

// TestReconcileBehindAClosedGate: a Kustomization held back by a closed
// gate is not reported as reconciled: `reconcile` says which gate holds it
// and waits, until its timeout (an error that names the gate) or until
// the gate opens (the apply it waited for).
func TestReconcileBehindAClosedGate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	freeze := newGate(ns, "freeze", gatingv1alpha1.GateClosed)
	createWithStatus(g, freeze, func() { setGateStatus(freeze, gate.Decision{Message: "Gate closed by default"}) })
	sha := appWithSource(t, g, ns, false, "freeze")

	held := fmt.Sprintf("held back: Reconciliation is waiting approval, gate '%s/freeze' is closed.", ns)
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	testutil.WaitFor(g, env.Client, ks, func(ks *kustomizev1.Kustomization) bool {
		return conditions.IsFalse(ks, meta.ApprovedCondition)
	})
	// Held already, the request is handled well within the timeout, even
	// on a busy machine.
	_, _, err := runQuietly(t, "reconcile", "ks", "app", "-n", ns, "--timeout", "15s")
	g.Expect(err).To(MatchError(ContainSubstring("Kustomization " + ns + "/app was not reconciled within 15s: it still waits: " + held)))

	cmd := start(t, "reconcile", "ks", "app", "-n", ns, "--timeout", "2m")
	g.Eventually(cmd.out.String, time.Minute).Should(ContainSubstring("◎ Kustomization " + ns + "/app waits: " + held))
	g.Consistently(cmd.done, 2*pollInterval).ShouldNot(Receive(), "a held object is not reconciled")

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(freeze), freeze)).To(Succeed())
	setGateStatus(freeze, gate.Decision{Open: true, Message: "Gate opened by request"})
	g.Expect(env.Client.Status().Update(ctx, freeze)).To(Succeed())

	g.Eventually(cmd.done, time.Minute).Should(Receive(&err))
	g.Expect(err).NotTo(HaveOccurred(), cmd.out.String())
	applied := "Applied revision: main@sha1:" + sha
	g.Expect(cmd.out.String()).To(ContainSubstring("✔ Kustomization " + ns + "/app reconciled: " + applied))

	// Closed again, `get` says that the next change waits, beside what
	// was last applied.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(freeze), freeze)).To(Succeed())
	setGateStatus(freeze, gate.Decision{Message: "Gate closed by request"})
	g.Expect(env.Client.Status().Update(ctx, freeze)).To(Succeed())
	g.Eventually(func() string {
		out, _, _ := runQuietly(t, "get", "ks", "-n", ns, "--no-header")
		return out
	}, time.Minute).Should(MatchRegexp(`True\s+` + regexp.QuoteMeta("held back: Reconciliation is waiting approval, gate '"+ns+"/freeze' is closed. Last: "+applied)))
}

// runQuietly runs the command args to its end, like run, without moving
// the clock.
func runQuietly(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err = root.Execute()
	return out.String(), errOut.String(), err
}
