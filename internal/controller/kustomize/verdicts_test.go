package kustomize

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/patch"
)

// TestHealthRechecksAskTheWatch: a Kustomization that waits for objects
// reads them in none of its rechecks: the watch of the applied objects
// judged them as it was delivered them, still in progress or healthy. The
// last apply's memory moves with their status all the same: the run that
// ends the wait certifies it in status.verified.
func TestHealthRechecksAskTheWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, fresh, run := steadyAndStuck(t, g)
	judged := func(name string) func() string {
		return func() string {
			h, _ := fresh.Health.Health(ctx, appsv1.SchemeGroupVersion.WithKind("Deployment"), ns, name)
			return h.Status
		}
	}
	deploymentReads := func() int { return reads.Of(ns, "deployments", "web", "stuck") }
	for _, name := range []string{"steady", "stuck"} {
		obj, err := run(name)
		g.Expect(err).To(MatchError(ContainSubstring("in progress: Deployment/")), "just applied, %s", name)
		g.Expect(conditions.Get(obj, meta.HealthyCondition).Status).To(BeEquivalentTo("Unknown"))
	}
	before := deploymentReads()

	g.Eventually(judged("stuck"), timeout, interval).Should(Equal(string(health.InProgress)))
	_, err := run("stuck")
	g.Expect(err).To(MatchError(ContainSubstring("in progress: Deployment/" + ns + "/stuck")))
	g.Expect(deploymentReads()).To(Equal(before), "a recheck of an object still in progress reads nothing")

	g.Eventually(judged("web"), timeout, interval).Should(Equal(string(health.Current)))
	obj, err := run("steady")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditions.IsTrue(obj, meta.HealthyCondition)).To(BeTrue())
	g.Expect(deploymentReads()).To(Equal(before), "an object that became healthy is not read either")
	g.Expect(obj.Status.Verified).NotTo(BeNil(), "the apply is certified at the versions the watch judged")
}

// TestHealthWatchWakesTheWait: the watch of the applied objects wakes a
// Kustomization the moment every object it waits for is judged healthy,
// rather than at its next recheck; one that waits for a Deployment still
// rolling out is not woken. The woken run reads nothing and ends the wait.
func TestHealthWatchWakesTheWait(t *testing.T) {
	g := NewWithT(t)
	ns, fresh, run := steadyAndStuck(t, g)
	notifier, ok := fresh.Health.(health.Notifier)
	g.Expect(ok).To(BeTrue(), "the versions cache tells of health changes")
	fresh.Wakes = health.NewWakes(notifier)
	wakes := fresh.wakeOnHealth()
	for _, name := range []string{"stuck", "steady"} {
		_, err := run(name)
		g.Expect(err).To(MatchError(ContainSubstring("in progress: Deployment/")), "just applied, %s", name)
	}
	before := reads.Of(ns, "deployments", "web", "stuck")

	var woken event.GenericEvent
	g.Eventually(wakes, timeout).Should(Receive(&woken))
	g.Expect(woken.Object.GetNamespace()).To(Equal(ns))
	g.Expect(woken.Object.GetName()).To(Equal("steady"), "only the Kustomization whose objects are all healthy")
	g.Expect(wakes).NotTo(Receive(), "a Deployment still rolling out wakes nothing")

	obj, err := run("steady")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditions.IsTrue(obj, meta.HealthyCondition)).To(BeTrue())
	g.Expect(reads.Of(ns, "deployments", "web", "stuck")).To(Equal(before), "the woken run reads nothing")
}

// steadyAndStuck sets up two suspended Kustomizations that wait for a
// Deployment each, "steady" (of no replica: healthy soon after its apply)
// and "stuck" (never available), and returns their namespace, a reconciler
// with no memory and its own watch, and a function that runs one of them
// with it.
func steadyAndStuck(t *testing.T, g *WithT) (string, *KustomizationReconciler, func(name string) (*kustomizev1.Kustomization, error)) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{
		"steady/web.yaml":  deployment(ns, "web"),
		"stuck/stuck.yaml": stuckDeployment(ns, "stuck"),
	})
	applyManifests(g, ns, src)
	// Suspended: the test's reconciler alone runs them.
	applyManifests(g, ns, kustomization("steady", "app", "  path: ./steady\n  wait: true\n  timeout: 10m\n  suspend: true\n")+
		"---\n"+kustomization("stuck", "app", "  path: ./stuck\n  wait: true\n  timeout: 10m\n  suspend: true\n"))
	g.Eventually(func() *meta.Artifact {
		var repo sourcev1.GitRepository
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &repo)
		return repo.Status.Artifact
	}, timeout, interval).ShouldNot(BeNil())

	fresh := freshReconciler(t, g)
	run := func(name string) (*kustomizev1.Kustomization, error) {
		obj := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
		patcher := patch.NewHelper(obj, env.Client)
		_, err := fresh.run(ctx, obj, patcher)
		g.Expect(patcher.Patch(ctx, obj)).To(Succeed())
		return obj, err
	}
	return ns, fresh, run
}
