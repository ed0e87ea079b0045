package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// The tests of this file stop the API server. They do it to a control plane
// of their own, not to the package's: the package's controller and the
// other tests keep theirs.

// Short lease flags: a leader that cannot renew for leaseRenewDeadline
// loses the lease.
const (
	leaseDuration      = 4 * time.Second
	leaseRenewDeadline = 3 * time.Second
	leaseRetryPeriod   = 1 * time.Second
)

// leaseExitMargin is how much later than the renew deadline (and a retry
// period) the leader may exit after the API server is gone, on a busy
// machine.
const leaseExitMargin = 20 * time.Second

// A leader that cannot reach the API server for longer than the renew
// deadline loses the lease, and then exits with an error rather than go
// on reconciling: once the lease expires another replica may take it, and
// two leaders would reconcile the same objects (split brain). Security
// reference row 38.
func TestController_LeaderExitsWhenAPIServerIsGone(t *testing.T) {
	g := NewWithT(t)
	cp, kc := privateControlPlane(t, g)
	proc := startPrivateController(t, g, kc,
		"--controllers", "source",
		"--enable-leader-election",
		"--leader-election-namespace", "default",
		"--leader-election-lease-duration", leaseDuration.String(),
		"--leader-election-renew-deadline", leaseRenewDeadline.String(),
		"--leader-election-retry-period", leaseRetryPeriod.String(),
	)
	holder := waitLeaseHolder(g, cp, client.ObjectKey{Namespace: "default", Name: "windlass-source-leader-election"}, proc)
	t.Logf("%s holds the lease", holder)
	// Renewals go on while the API server is up.
	g.Consistently(proc.Exited, 2*leaseDuration, interval).Should(BeFalse(), proc.Output)

	start := time.Now()
	g.Expect(cp.StopAPIServer()).To(Succeed())
	t.Logf("the API server stopped in %.1fs", time.Since(start).Seconds())
	g.Eventually(proc.Done(), leaseRenewDeadline+leaseRetryPeriod+leaseExitMargin, interval).Should(BeClosed(), func() string {
		return "the leader is still running after losing the API server:\n" + proc.Output()
	})
	t.Logf("the controller exited %.1fs after the API server was stopped", time.Since(start).Seconds())

	var exitErr *exec.ExitError
	g.Expect(errors.As(proc.Err(), &exitErr)).To(BeTrue(), "the controller exits with a status: %v", proc.Err())
	g.Expect(exitErr.ExitCode()).NotTo(BeZero())
	g.Expect(proc.Output()).To(ContainSubstring("leader election lost"))
	t.Logf("the controller's last words:\n%s", lastLines(proc.Output(), 3))
}

// The API server goes away for a few seconds and comes back (an upgrade of
// the control plane, a restart): the controller rides it out without
// exiting, keeps its lease (the outage is shorter than the renew deadline),
// and reconciles what changed after the restart: a new GitRepository and
// a new Kustomization, and a reconciliation requested of an old one.
func TestController_RecoversFromAPIServerRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp, kc := privateControlPlane(t, g)
	ns := cp.CreateNamespace(t)
	proc := startPrivateController(t, g, kc,
		"--enable-leader-election",
		"--leader-election-namespace", ns,
		// Far longer than the outage, however slow the restart.
		"--leader-election-lease-duration", "3m",
		"--leader-election-renew-deadline", "2m",
		"--leader-election-retry-period", "2s",
	)
	leaseKey := client.ObjectKey{Namespace: ns, Name: "windlass-leader-election"}
	holder := waitLeaseHolder(g, cp, leaseKey, proc)

	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	before := srv.MustInitRepo(t, "before.git", "main")
	rev1 := before.MustCommit(t, "main", map[string]string{"a.yaml": "a: 1\n"}, "one")
	old := createIn(g, cp, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "before", base+"/before.git"))
	waitReadyIn(g, cp.Client, client.ObjectKeyFromObject(old), "main@sha1:"+rev1)

	start := time.Now()
	g.Expect(cp.StopAPIServer()).To(Succeed())
	t.Logf("the API server stopped in %.1fs", time.Since(start).Seconds())
	g.Consistently(proc.Exited, 3*time.Second, interval).Should(BeFalse(), proc.Output)
	restart := time.Now()
	g.Expect(cp.StartAPIServer()).To(Succeed())
	t.Logf("the API server restarted in %.1fs, after %.1fs down", time.Since(restart).Seconds(), time.Since(start).Seconds())

	// A change to an existing object: a new commit, and a reconciliation
	// requested through the annotation.
	rev2 := before.MustCommit(t, "main", map[string]string{"a.yaml": "a: 2\n"}, "two")
	g.Expect(cp.Client.Patch(ctx, old, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+meta.ReconcileRequestAnnotation+`":"after-restart"}}}`)))).To(Succeed())
	// New objects: a source and a Kustomization that applies it.
	after := srv.MustInitRepo(t, "after.git", "main")
	rev3 := after.MustCommit(t, "main", map[string]string{"deploy/cm.yaml": configMapYAML(ns, "applied-after-restart")}, "one")
	src := createIn(g, cp, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "after", base+"/after.git"))
	ks := createIn(g, cp, &kustomizev1.Kustomization{}, fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: after, namespace: %s}
spec:
  interval: 10m
  retryInterval: 2s
  path: ./deploy
  prune: true
  sourceRef: {kind: GitRepository, name: after}
`, ns))

	got := waitReadyIn(g, cp.Client, client.ObjectKeyFromObject(old), "main@sha1:"+rev2)
	g.Expect(got.Status.LastHandledReconcileAt).To(Equal("after-restart"))
	waitReadyIn(g, cp.Client, client.ObjectKeyFromObject(src), "main@sha1:"+rev3)
	g.Eventually(func(g Gomega) {
		k := &kustomizev1.Kustomization{}
		g.Expect(cp.Client.Get(ctx, client.ObjectKeyFromObject(ks), k)).To(Succeed())
		g.Expect(conditions.IsTrue(k, meta.ReadyCondition)).To(BeTrue(), conditions.Message(k, meta.ReadyCondition))
		g.Expect(k.Status.LastAppliedRevision).To(Equal("main@sha1:" + rev3))
	}, timeout, interval).Should(Succeed())
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "applied-after-restart"}, &corev1.ConfigMap{})).To(Succeed())
	t.Logf("reconciled the changes %.1fs after the restart", time.Since(restart).Seconds())

	g.Expect(proc.Exited()).To(BeFalse(), "the controller exited")
	lease := &coordinationv1.Lease{}
	g.Expect(cp.Client.Get(ctx, leaseKey, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Equal(holder)), "the leader kept its lease")
	g.Expect(proc.Terminate(shutdownGrace)).To(Succeed(), "the controller stops cleanly on SIGTERM")
}

// privateControlPlane starts a control plane for t alone (with opts),
// stopped when t ends, and returns it with the path of an administrator's
// kubeconfig.
func privateControlPlane(t *testing.T, g *WithT, opts ...testenv.Option) (*testenv.Environment, string) {
	t.Helper()
	start := time.Now()
	cp, err := testenv.Start(opts...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the private control plane: %v", err)
		}
	})
	kc, err := cp.KubeconfigFile(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("started a private control plane in %.1fs", time.Since(start).Seconds())
	return cp, kc
}

// startPrivateController starts `windlass controller` with extra flags
// against the cluster of kc, and waits until it is ready. The process is
// killed when t ends, before the control plane stops, and its output is
// shown if t failed.
func startPrivateController(t *testing.T, g *WithT, kc string, extra ...string) *controller {
	t.Helper()
	proc, err := startController(kc, t.TempDir(), "", extra...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		proc.Kill()
		if t.Failed() {
			t.Logf("windlass controller output:\n%s", proc.Output())
		}
	})
	g.Expect(proc.waitReady(timeout)).To(Succeed(), proc.Output)
	return proc
}

// waitLeaseHolder waits until the lease key of cp has a holder, and
// returns it.
func waitLeaseHolder(g *WithT, cp *testenv.Environment, key client.ObjectKey, proc *controller) string {
	lease := &coordinationv1.Lease{}
	g.Eventually(func(g Gomega) {
		g.Expect(cp.Client.Get(context.Background(), key, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Not(BeEmpty())))
	}, timeout, interval).Should(Succeed(), proc.Output)
	return *lease.Spec.HolderIdentity
}

// createIn creates in cp the object that manifest declares.
func createIn[T client.Object](g *WithT, cp *testenv.Environment, obj T, manifest string) T {
	g.Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed(), manifest)
	g.Expect(cp.Client.Create(context.Background(), obj)).To(Succeed())
	return obj
}

// gitRepositoryYAML is the manifest of a GitRepository that follows the
// main branch of url.
func gitRepositoryYAML(ns, name, url string) string {
	return fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: %s, namespace: %s}
spec:
  interval: 10m
  url: %s
  ref: {branch: main}
`, name, ns, url)
}

// lastLines returns the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
