package kustomize

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/versions"
)

// healthAt is a HealthWatch that holds the health of objects by name.
type healthAt map[string]versions.Health

func (h healthAt) Health(_ context.Context, _ schema.GroupVersionKind, _, name string) (versions.Health, bool) {
	v, ok := h[name]
	return v, ok
}

// TestPendingVerdicts checks when the watch's health of an object stands
// for a read: only for an object the last check found, held by the watch
// at that check's generation or a later one.
func TestPendingVerdicts(t *testing.T) {
	ref := func(name string) health.ObjectRef {
		return health.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: name}
	}
	last := []health.ObjectStatus{
		{Ref: ref("web"), Status: health.InProgress, ResourceVersion: "10", Generation: 2},
		{Ref: ref("missing"), Status: health.NotFound},
	}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	tests := []struct {
		name   string
		ref    health.ObjectRef
		watch  healthAt
		want   health.ObjectStatus
		wantOK bool
	}{
		{name: "rolled out since", ref: ref("web"),
			watch:  healthAt{"web": {ResourceVersion: "12", Generation: 2, Status: "Current", Message: "Deployment is available"}},
			want:   health.ObjectStatus{Ref: ref("web"), Status: health.Current, Message: "Deployment is available", ResourceVersion: "12", Generation: 2},
			wantOK: true},
		{name: "still rolling out", ref: ref("web"),
			watch:  healthAt{"web": {ResourceVersion: "10", Generation: 2, Status: "InProgress", Message: "Replicas: 0/1"}},
			want:   health.ObjectStatus{Ref: ref("web"), Status: health.InProgress, Message: "Replicas: 0/1", ResourceVersion: "10", Generation: 2},
			wantOK: true},
		{name: "a later generation", ref: ref("web"),
			watch:  healthAt{"web": {ResourceVersion: "15", Generation: 3, Status: "InProgress"}},
			want:   health.ObjectStatus{Ref: ref("web"), Status: health.InProgress, ResourceVersion: "15", Generation: 3},
			wantOK: true},
		{name: "a watch behind the apply the last check saw", ref: ref("web"),
			watch: healthAt{"web": {ResourceVersion: "8", Generation: 1, Status: "Current"}}},
		{name: "not held by the watch", ref: ref("web"), watch: healthAt{}},
		{name: "not found by the last check", ref: ref("missing"),
			watch: healthAt{"missing": {ResourceVersion: "20", Generation: 1, Status: "Current"}}},
		{name: "not in the last check", ref: ref("other"),
			watch: healthAt{"other": {ResourceVersion: "20", Generation: 1, Status: "Current"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			verdicts := &pendingVerdicts{watch: tt.watch, last: last}
			got, ok := verdicts.Verdict(context.Background(), tt.ref, gvk)
			g.Expect(ok).To(Equal(tt.wantOK))
			g.Expect(got).To(Equal(tt.want))
			if ok {
				g.Expect(verdicts.answered).To(HaveKeyWithValue(tt.ref, tt.watch[tt.ref.Name]), "kept for refreshVersions")
			} else {
				g.Expect(verdicts.answered).To(BeEmpty())
			}
		})
	}
}

// rollingOut returns a Deployment of one replica, which stays in progress:
// the test control plane has no kubelet to run its pod.
func rollingOut(ns, name string) string {
	return strings.Replace(deployment(ns, name), "replicas: 0", "replicas: 1", 1)
}

// TestHealthRechecksAskTheWatch: a Kustomization that waits for objects
// reads them in none of its rechecks: the watch of the applied objects
// judged them as it was delivered them, still in progress or healthy. The
// last apply's memory moves with their status all the same: the run that
// ends the wait certifies it in status.verified.
func TestHealthRechecksAskTheWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{
		"steady/web.yaml":  deployment(ns, "web"),
		"stuck/stuck.yaml": rollingOut(ns, "stuck"),
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
