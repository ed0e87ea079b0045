package source

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestReconcileGitRepositoryGates runs the gates step alone, against a
// fake client: Blocked, the hold, the event on a transition only, and the
// refusal of a gate in another namespace.
func TestReconcileGitRepositoryGates(t *testing.T) {
	const blocked = "Fetching new revisions is blocked, gate 'apps/shut' is closed."
	stale := &metav1.Condition{Type: meta.BlockedCondition, Status: metav1.ConditionTrue, Reason: meta.GateClosedReason, Message: blocked}
	tests := []struct {
		name    string
		gates   []meta.NamespacedObjectReference
		noCross bool
		before  *metav1.Condition // Blocked before the step
		// wantMessage is Blocked's message afterwards, "" for none.
		wantMessage string
		wantReason  string
		wantErr     string // "hold", "stall" or ""
		wantEvent   string
	}{
		{name: "no gates: a stale Blocked goes", before: stale},
		{name: "open gates: Blocked goes", before: stale,
			gates: []meta.NamespacedObjectReference{{Name: "open"}, {Name: "ops", Namespace: "ops"}}},
		{name: "a closed gate holds, with an event", gates: []meta.NamespacedObjectReference{{Name: "open"}, {Name: "shut"}},
			wantMessage: blocked, wantReason: meta.GateClosedReason, wantErr: "hold",
			wantEvent: "Normal GateClosed " + blocked},
		{name: "still closed: no second event", gates: []meta.NamespacedObjectReference{{Name: "shut"}}, before: stale,
			wantMessage: blocked, wantReason: meta.GateClosedReason, wantErr: "hold"},
		{name: "a missing gate holds and says so", gates: []meta.NamespacedObjectReference{{Name: "gone"}}, before: stale,
			wantMessage: "Fetching new revisions is blocked, gate 'apps/gone' is missing.", wantReason: meta.GateClosedReason,
			wantErr: "hold", wantEvent: "Normal GateClosed Fetching new revisions is blocked, gate 'apps/gone' is missing."},
		{name: "a gate in another namespace is refused", noCross: true,
			gates:       []meta.NamespacedObjectReference{{Name: "ops", Namespace: "ops"}},
			wantMessage: "gate 'ops/ops' is in another namespace, and cross-namespace references are not allowed",
			wantReason:  meta.AccessDeniedReason, wantErr: "stall"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var gates []client.Object
			for _, k := range []struct {
				ns, name string
				opened   bool
			}{{"apps", "open", true}, {"apps", "shut", false}, {"ops", "ops", true}} {
				gt := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: k.name}}
				testutil.MarkGate(gt, k.opened)
				gates = append(gates, gt)
			}
			recorder := events.NewFakeRecorder(10)
			r := &GitRepositoryReconciler{
				Client: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(gates...).Build(),
				Events: &event.Recorder{Kubernetes: recorder}, NoCrossNamespaceRefs: tt.noCross,
			}
			obj := newGitRepository("apps", "app", "https://example.com/app.git")
			obj.Spec.Gates = tt.gates
			if tt.before != nil {
				obj.Status.Conditions = []metav1.Condition{*tt.before}
			}

			runner := &reconcile.Runner[*sourcev1.GitRepository]{Client: r.Client, Events: r.Events, NoCrossNamespaceRefs: tt.noCross,
				Kind: reconcile.Kind[*sourcev1.GitRepository]{Name: sourcev1.GitRepositoryKind, Held: r.held}}
			err := runner.Admit(context.Background(), obj)
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
				g.Expect(holding.RequeueAfter).To(Equal(10 * time.Minute))
				g.Expect(err.Error()).To(Equal(tt.wantMessage))
			case "stall":
				g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%v", err)
				g.Expect(stalling.Reason).To(Equal(meta.AccessDeniedReason))
			}
			if tt.wantMessage == "" {
				g.Expect(conditions.Has(obj, meta.BlockedCondition)).To(BeFalse())
			} else {
				g.Expect(conditions.IsTrue(obj, meta.BlockedCondition)).To(BeTrue())
				g.Expect(conditions.Reason(obj, meta.BlockedCondition)).To(Equal(tt.wantReason))
				g.Expect(conditions.Message(obj, meta.BlockedCondition)).To(Equal(tt.wantMessage))
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

// setGate creates the Gate when it does not exist, and writes its Opened
// condition through its status, as the gating controller would.
func setGate(g *WithT, ns, name string, opened bool) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: ns, Name: name}
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))).To(Succeed())
	g.Eventually(func() error {
		var gt gatingv1alpha1.Gate
		if err := env.Client.Get(ctx, key, &gt); err != nil {
			return err
		}
		testutil.MarkGate(&gt, opened)
		return env.Client.Status().Update(ctx, &gt)
	}, timeout, interval).Should(Succeed())
}

// blockedBy is a waitFor condition: Blocked=True with message.
func blockedBy(message string) func(*sourcev1.GitRepository) bool {
	return func(o *sourcev1.GitRepository) bool {
		return conditions.IsTrue(o, meta.BlockedCondition) && conditions.Message(o, meta.BlockedCondition) == message
	}
}

// TestGitRepository_ClosedGateBlocksFetching: behind a closed gate a new
// commit is not fetched (the server is not even asked), the last artifact
// stays Ready and served; the gate opening fetches the new commit at once
// (the interval is ten minutes: the watch on Gates does it).
func TestGitRepository_ClosedGateBlocksFetching(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	srv, repo, obj, sha1 := gatedRepository(t, g, ns)
	ready := waitFor(g, obj, readyAt("main@sha1:"+sha1))
	g.Expect(conditions.Has(ready, meta.BlockedCondition)).To(BeFalse())

	blocked := "Fetching new revisions is blocked, gate '" + ns + "/freeze' is closed."
	setGate(g, ns, "freeze", false)
	waitFor(g, obj, blockedBy(blocked))
	repo.MustCommit(t, "main", map[string]string{"a.yaml": "a: 2\n"}, "two")
	requests := srv.Requests()
	testutil.RequestReconcile(g, env.Client, obj, "blocked")
	got := waitFor(g, obj, func(o *sourcev1.GitRepository) bool { return o.Status.LastHandledReconcileAt == "blocked" })
	g.Expect(srv.Requests()).To(Equal(requests), "nothing is fetched")
	g.Expect(got.Status.Artifact).To(Equal(ready.Status.Artifact))
	g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal("stored artifact for revision 'main@sha1:" + sha1 + "'"))
	g.Expect(conditions.Reason(got, meta.BlockedCondition)).To(Equal(meta.GateClosedReason))
	dir := testutil.Extract(t, g, testutil.Download(g, nil, got.Status.Artifact))
	g.Expect(dir+"/a.yaml").To(BeAnExistingFile(), "the last artifact is served")
	g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, obj, sourcev1.GitRepositoryKind) }, timeout, interval).
		Should(ContainElement("GateClosed: " + blocked))

	setGate(g, ns, "freeze", true)
	got = waitFor(g, obj, func(o *sourcev1.GitRepository) bool {
		return readyAt("")(o) && o.Status.Artifact.Revision != ready.Status.Artifact.Revision
	})
	g.Expect(conditions.Has(got, meta.BlockedCondition)).To(BeFalse())
}

// TestGitRepository_MissingGateThenRemoved: a missing gate blocks a
// GitRepository that has no artifact yet, and Ready says why; creating the
// gate opened releases it. Removing the gates from the spec of a blocked
// GitRepository removes Blocked.
func TestGitRepository_MissingGateThenRemoved(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "app.git", "main").MustCommit(t, "main", map[string]string{"a.yaml": "a: 1\n"}, "one")
	obj := newGitRepository(ns, "app", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	obj.Spec.Gates = []meta.NamespacedObjectReference{{Name: "later"}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())

	missing := "Fetching new revisions is blocked, gate '" + ns + "/later' is missing."
	got := waitFor(g, obj, blockedBy(missing))
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(conditions.Reason(got, meta.ReadyCondition)).To(Equal(meta.GateClosedReason))
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(Equal(missing))
	g.Expect(got.Status.Artifact).To(BeNil())
	g.Expect(srv.Requests()).To(BeZero())

	setGate(g, ns, "later", true)
	got = waitFor(g, obj, readyAt(""))
	g.Expect(conditions.Has(got, meta.BlockedCondition)).To(BeFalse())

	setGate(g, ns, "later", false)
	waitFor(g, obj, blockedBy("Fetching new revisions is blocked, gate '"+ns+"/later' is closed."))
	g.Expect(env.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"gates":null}}`)))).To(Succeed())
	got = waitFor(g, obj, func(o *sourcev1.GitRepository) bool {
		return readyAt("")(o) && !conditions.Has(o, meta.BlockedCondition)
	})
	g.Expect(got.Spec.Gates).To(BeEmpty())
}

// gatedRepository serves a repository with one commit on main and creates
// the GitRepository "app" of it in ns, behind the gate "freeze", created
// open. It returns the server, the repository, the object and the commit.
func gatedRepository(t *testing.T, g *WithT, ns string) (*gitserver.Server, *gitserver.Repo, *sourcev1.GitRepository, string) {
	setGate(g, ns, "freeze", true)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{"a.yaml": "a: 1\n"}, "one")
	obj := newGitRepository(ns, "app", base+"/app.git")
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	obj.Spec.Gates = []meta.NamespacedObjectReference{{Name: "freeze"}}
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return srv, repo, obj, sha
}
