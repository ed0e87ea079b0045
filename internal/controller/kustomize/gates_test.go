package kustomize

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestReconcileGates admits a Kustomization (Runner.Admit) against a fake client: the
// Approved condition, the hold, the event on a transition only, and the
// refusal of a gate in another namespace.
func TestReconcileGates(t *testing.T) {
	const waiting = "Reconciliation is waiting approval, gate 'apps/b' is closed."
	tests := []struct {
		name     string
		gates    []meta.NamespacedObjectReference
		noCross  bool
		approved *metav1.Condition // the condition before the step
		// wantStatus is Approved's status afterwards, "" for none.
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantErr     string // "hold", "stall" or ""
		wantEvent   string
	}{
		{name: "no gates: a stale Approved goes",
			approved: &metav1.Condition{Type: meta.ApprovedCondition, Status: metav1.ConditionFalse, Reason: meta.GateClosedReason, Message: waiting}},
		{name: "one open gate", gates: refs("a"),
			wantStatus: metav1.ConditionTrue, wantReason: meta.GatesOpenedReason,
			wantMessage: "Reconciliation is approved, gate 'apps/a' is open."},
		{name: "open gates, one in another namespace", gates: append(refs("a"), meta.NamespacedObjectReference{Name: "ops", Namespace: "ops"}),
			wantStatus: metav1.ConditionTrue, wantReason: meta.GatesOpenedReason,
			wantMessage: "Reconciliation is approved, gates 'apps/a', 'ops/ops' are open."},
		{name: "a closed gate holds, with an event", gates: refs("a", "b"),
			wantStatus: metav1.ConditionFalse, wantReason: meta.GateClosedReason, wantMessage: waiting,
			wantErr: "hold", wantEvent: "Normal GateClosed " + waiting},
		{name: "still closed: no second event", gates: refs("b"),
			approved:   &metav1.Condition{Type: meta.ApprovedCondition, Status: metav1.ConditionFalse, Reason: meta.GateClosedReason, Message: waiting},
			wantStatus: metav1.ConditionFalse, wantReason: meta.GateClosedReason, wantMessage: waiting, wantErr: "hold"},
		{name: "a gate not decided yet is closed", gates: refs("undecided"),
			wantStatus: metav1.ConditionFalse, wantReason: meta.GateClosedReason,
			wantMessage: "Reconciliation is waiting approval, gate 'apps/undecided' is closed.", wantErr: "hold",
			wantEvent: "Normal GateClosed Reconciliation is waiting approval, gate 'apps/undecided' is closed."},
		{name: "a missing gate holds and says so", gates: refs("a", "gone"),
			approved:   &metav1.Condition{Type: meta.ApprovedCondition, Status: metav1.ConditionTrue, Reason: meta.GatesOpenedReason, Message: "x"},
			wantStatus: metav1.ConditionFalse, wantReason: meta.GateClosedReason,
			wantMessage: "Reconciliation is waiting approval, gate 'apps/gone' is missing.", wantErr: "hold",
			wantEvent: "Normal GateClosed Reconciliation is waiting approval, gate 'apps/gone' is missing."},
		{name: "a gate in another namespace is refused", noCross: true,
			gates:      []meta.NamespacedObjectReference{{Name: "ops", Namespace: "ops"}},
			wantStatus: metav1.ConditionFalse, wantReason: meta.AccessDeniedReason,
			wantMessage: "gate 'ops/ops' is in another namespace, and cross-namespace references are not allowed", wantErr: "stall"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
				testutil.Gate("apps", "a", true), testutil.Gate("apps", "b", false),
				&gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "undecided"}}, testutil.Gate("ops", "ops", true),
			).Build()
			recorder := events.NewFakeRecorder(10)
			r := &KustomizationReconciler{Client: c, Events: &event.Recorder{Kubernetes: recorder}, NoCrossNamespaceRefs: tt.noCross}
			obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
				Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Gates: tt.gates,
					SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}}}
			if tt.approved != nil {
				obj.Status.Conditions = []metav1.Condition{*tt.approved}
			}

			err := r.runner().Admit(context.Background(), obj)
			var (
				holding  *outcome.Holding
				stalling *outcome.Stalling
			)
			switch tt.wantErr {
			case "":
				g.Expect(err).NotTo(HaveOccurred())
			case "hold":
				g.Expect(errors.As(err, &holding)).To(BeTrue(), "%v", err)
				g.Expect(holding.Reason).To(Equal(meta.GateClosedReason))
				g.Expect(holding.RequeueAfter).To(Equal(time.Hour))
				g.Expect(err.Error()).To(Equal(tt.wantMessage))
			case "stall":
				g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%v", err)
				g.Expect(stalling.Reason).To(Equal(meta.AccessDeniedReason))
			}
			approved := conditions.Get(obj, meta.ApprovedCondition)
			if tt.wantStatus == "" {
				g.Expect(approved).To(BeNil())
			} else {
				g.Expect(approved).NotTo(BeNil())
				g.Expect(approved.Status).To(Equal(tt.wantStatus))
				g.Expect(approved.Reason).To(Equal(tt.wantReason))
				g.Expect(approved.Message).To(Equal(tt.wantMessage))
			}
			var recorded []string
			for len(recorder.Events) > 0 {
				recorded = append(recorded, <-recorder.Events)
			}
			if tt.wantEvent == "" {
				g.Expect(recorded).To(BeEmpty())
			} else {
				g.Expect(recorded).To(Equal([]string{tt.wantEvent}))
			}
		})
	}
}

// refs returns references to gates of the consumer's namespace.
func refs(names ...string) []meta.NamespacedObjectReference {
	out := make([]meta.NamespacedObjectReference, 0, len(names))
	for _, n := range names {
		out = append(out, meta.NamespacedObjectReference{Name: n})
	}
	return out
}

// createGate creates a Gate in ns and writes its Opened condition, as the
// gating controller would.
func createGate(g *WithT, ns, name string, opened bool) {
	g.Expect(env.Client.Create(context.Background(), &gatingv1alpha1.Gate{ObjectMeta: objectMeta(ns, name)})).To(Succeed())
	setGate(g, ns, name, opened)
}

// setGate writes the Opened condition of a Gate through its status, as the
// gating controller would.
func setGate(g *WithT, ns, name string, opened bool) {
	ctx := context.Background()
	g.Eventually(func() error {
		var gt gatingv1alpha1.Gate
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &gt); err != nil {
			return err
		}
		testutil.MarkGate(&gt, opened)
		return env.Client.Status().Update(ctx, &gt)
	}, timeout, interval).Should(Succeed())
}

// configMapValue returns the value of ConfigMap "a" of ns, or "" when it
// does not exist.
func configMapValue(g *WithT, ns string) string {
	var cm corev1.ConfigMap
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "a"}, &cm)
	if apierrors.IsNotFound(err) {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cm.Data["value"]
}

// approvedIs is a waitForKs condition on Approved.
func approvedIs(status metav1.ConditionStatus, message string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool {
		c := conditions.Get(k, meta.ApprovedCondition)
		return c != nil && c.Status == status && c.Message == message
	}
}

// handledKs is a waitForKs condition: the reconcile request token was
// handled.
func handledKs(token string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool { return k.Status.LastHandledReconcileAt == token }
}

// newRevision commits value to ConfigMap "a" of the repository and has the
// GitRepository "app" of ns fetch it; it returns the new revision.
func newRevision(t *testing.T, g *WithT, ns string, repo *gitserver.Repo, value string) string {
	sha := repo.MustCommit(t, "main", map[string]string{"deploy/a.yaml": configMap(ns, "a", value)}, "value "+value)
	revision := "main@sha1:" + sha
	src := &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}
	testutil.RequestReconcile(g, env.Client, src, "fetch-"+value)
	testutil.WaitFor(g, env.Client, src, func(s *sourcev1.GitRepository) bool {
		return s.Status.Artifact != nil && s.Status.Artifact.Revision == revision
	})
	return revision
}

// TestGates_ClosedGateHoldsKustomization: behind a closed gate a new
// commit is not applied, and Ready keeps describing the last apply; the
// gate opening applies it at once (the Kustomization's interval is an
// hour: the watch on Gates does it); closing it again holds the next one.
func TestGates_ClosedGateHoldsKustomization(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	createGate(g, ns, "approval", true)
	repo, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, strings.Replace(kustomization("app", "app", "  path: ./deploy\n  gates:\n  - name: approval\n"),
		"interval: 10m", "interval: 1h", 1))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	ks := &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}
	first := waitForKs(g, key, ksReady(""))
	g.Expect(first.Spec.Interval.Duration).To(Equal(time.Hour))
	g.Expect(conditions.Reason(first, meta.ApprovedCondition)).To(Equal(meta.GatesOpenedReason))
	g.Expect(conditions.Message(first, meta.ApprovedCondition)).To(Equal("Reconciliation is approved, gate '" + ns + "/approval' is open."))
	rev1 := first.Status.LastAppliedRevision
	g.Expect(configMapValue(g, ns)).To(Equal("1"))

	waiting := "Reconciliation is waiting approval, gate '" + ns + "/approval' is closed."
	setGate(g, ns, "approval", false)
	closed := waitForKs(g, key, approvedIs(metav1.ConditionFalse, waiting))
	rev2 := newRevision(t, g, ns, repo, "2")
	testutil.RequestReconcile(g, env.Client, ks, "held")
	held := waitForKs(g, key, handledKs("held"))
	g.Expect(configMapValue(g, ns)).To(Equal("1"), "nothing is applied behind a closed gate")
	g.Expect(held.Status.LastAppliedRevision).To(Equal(rev1))
	g.Expect(held.Status.LastAttemptedRevision).To(Equal(rev1), "the source is not even read")
	g.Expect(conditions.IsTrue(held, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.Message(held, meta.ReadyCondition)).To(Equal("Applied revision: " + rev1))
	g.Expect(conditions.Reason(held, meta.ApprovedCondition)).To(Equal(meta.GateClosedReason))
	g.Expect(held.Status.History).To(Equal(closed.Status.History),
		"a held run is no reconciliation in the history")
	g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, ks, kustomizev1.KustomizationKind) }, timeout, interval).
		Should(ContainElement("GateClosed: " + waiting))

	setGate(g, ns, "approval", true)
	opened := waitForKs(g, key, ksReady(rev2))
	g.Expect(configMapValue(g, ns)).To(Equal("2"))
	g.Expect(conditions.IsTrue(opened, meta.ApprovedCondition)).To(BeTrue())

	setGate(g, ns, "approval", false)
	waitForKs(g, key, approvedIs(metav1.ConditionFalse, waiting))
	newRevision(t, g, ns, repo, "3")
	testutil.RequestReconcile(g, env.Client, ks, "held-again")
	held = waitForKs(g, key, handledKs("held-again"))
	g.Expect(held.Status.LastAppliedRevision).To(Equal(rev2))
	g.Expect(configMapValue(g, ns)).To(Equal("2"))
}

// TestGates_BlockedSourceStillCorrectsDrift: a GitRepository behind a
// closed gate fetches no new commit and keeps its artifact Ready; a
// Kustomization of it, without gates, still corrects drift; opening the
// gate fetches the new commit, and the Kustomization applies it.
func TestGates_BlockedSourceStillCorrectsDrift(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	createGate(g, ns, "freeze", true)
	repo, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src+"  gates:\n  - name: freeze\n")
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	ks := &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")}
	rev1 := waitForKs(g, key, ksReady("")).Status.LastAppliedRevision

	setGate(g, ns, "freeze", false)
	gitRepo := &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}
	blocked := "Fetching new revisions is blocked, gate '" + ns + "/freeze' is closed."
	testutil.WaitFor(g, env.Client, gitRepo, func(s *sourcev1.GitRepository) bool {
		return conditions.IsTrue(s, meta.BlockedCondition) && conditions.Message(s, meta.BlockedCondition) == blocked
	})
	sha2 := repo.MustCommit(t, "main", map[string]string{"deploy/a.yaml": configMap(ns, "a", "2")}, "value 2")
	testutil.RequestReconcile(g, env.Client, gitRepo, "blocked")
	got := testutil.WaitFor(g, env.Client, gitRepo, func(s *sourcev1.GitRepository) bool {
		return s.Status.LastHandledReconcileAt == "blocked"
	})
	g.Expect(got.Status.Artifact.Revision).To(Equal(rev1), "no new commit is fetched")
	g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.Reason(got, meta.BlockedCondition)).To(Equal(meta.GateClosedReason))

	// Drift is corrected during the freeze.
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "a"}, &cm)).To(Succeed())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Update(context.Background(), &cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	testutil.RequestReconcile(g, env.Client, ks, "drift")
	waitForKs(g, key, func(k *kustomizev1.Kustomization) bool { return ksReady(rev1)(k) && handledKs("drift")(k) })
	g.Expect(configMapValue(g, ns)).To(Equal("1"))

	setGate(g, ns, "freeze", true)
	waitForKs(g, key, ksReady("main@sha1:"+sha2))
	g.Expect(configMapValue(g, ns)).To(Equal("2"))
	got = testutil.WaitFor(g, env.Client, gitRepo, func(s *sourcev1.GitRepository) bool { return conditions.IsTrue(s, meta.ReadyCondition) })
	g.Expect(conditions.Has(got, meta.BlockedCondition)).To(BeFalse())
}

// TestGates_MissingGateHolds: a gate that does not exist counts as closed
// and says so; creating it opened releases the Kustomization.
func TestGates_MissingGateHolds(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  gates:\n  - name: later\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	missing := "Reconciliation is waiting approval, gate '" + ns + "/later' is missing."
	got := waitForKs(g, key, approvedIs(metav1.ConditionFalse, missing))
	g.Expect(conditions.Reason(got, meta.ReadyCondition)).To(Equal(meta.GateClosedReason), "never reconciled: Ready says why")
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal(missing))
	g.Expect(configMapValue(g, ns)).To(BeEmpty())

	createGate(g, ns, "later", true)
	waitForKs(g, key, ksReady(""))
	g.Expect(configMapValue(g, ns)).To(Equal("1"))
}

// TestGates_RemovedGatesRelease: a Kustomization whose gates are removed
// from its spec loses its Approved condition and applies what it held.
func TestGates_RemovedGatesRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	createGate(g, ns, "approval", false)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": configMap(ns, "a", "1")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n  gates:\n  - name: approval\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, approvedIs(metav1.ConditionFalse, "Reconciliation is waiting approval, gate '"+ns+"/approval' is closed."))
	g.Expect(configMapValue(g, ns)).To(BeEmpty())

	g.Expect(env.Client.Patch(ctx, &kustomizev1.Kustomization{ObjectMeta: objectMeta(ns, "app")},
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"gates":null}}`)))).To(Succeed())
	got := waitForKs(g, key, ksReady(""))
	g.Expect(conditions.Has(got, meta.ApprovedCondition)).To(BeFalse())
	g.Expect(configMapValue(g, ns)).To(Equal("1"))
}
