package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
)

// setGateStatus writes the decision d to the status of g, as the gating
// controller does: the Opened condition, the times, and Ready with the
// same message.
func setGateStatus(g *gatingv1alpha1.Gate, d gate.Decision) {
	if d.Open {
		conditions.MarkTrue(g, gatingv1alpha1.OpenedCondition, meta.ReconciliationSucceededReason, "%s", d.Message)
	} else {
		conditions.MarkFalse(g, gatingv1alpha1.OpenedCondition, meta.ReconciliationSucceededReason, "%s", d.Message)
	}
	at := func(t *time.Time) *metav1.Time {
		if t == nil {
			return nil
		}
		mt := metav1.NewTime(*t)
		return &mt
	}
	g.Status.RequestedAt, g.Status.ResetToDefaultAt, g.Status.NextTransition = at(d.RequestedAt), at(d.ResetToDefaultAt), at(d.NextTransition)
	g.Status.ObservedGeneration = g.Generation
	conditions.MarkTrue(g, meta.ReadyCondition, meta.SucceededReason, "%s", d.Message)
}

// twoNamespaces creates two namespaces and returns them in the order they
// sort in, so that tables that span both are always in the same order.
func twoNamespaces(t *testing.T) (string, string) {
	ns1, ns2 := env.CreateNamespace(t), env.CreateNamespace(t)
	if ns2 < ns1 {
		return ns2, ns1
	}
	return ns1, ns2
}

// fakeGatingController stands for the gating controller, which this
// package's tests do not run: every 100ms it decides the gate key with
// internal/reconcile/gate, as the controller does, and writes the decision to the
// gate's status. With echo it also records the reconcile request it
// handled, as the controller's runner does; without, the command line can
// tell only from the decision.
func fakeGatingController(t *testing.T, key client.ObjectKey, echo bool) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	go func() {
		defer close(stopped)
		for {
			decideGate(ctx, key, echo)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// decideGate is one run of fakeGatingController.
func decideGate(ctx context.Context, key client.ObjectKey, echo bool) {
	var g gatingv1alpha1.Gate
	if err := env.Client.Get(ctx, key, &g); err != nil || g.Spec.Suspend {
		return
	}
	d, _, err := gate.Evaluate(&g, time.Now())
	if err != nil {
		return
	}
	setGateStatus(&g, d)
	if echo {
		g.Status.LastHandledReconcileAt = g.Annotations[meta.ReconcileRequestAnnotation]
	}
	_ = env.Client.Status().Update(ctx, &g) // a conflict is retried on the next run
}

// fixedTime parses an RFC 3339 time of the tests.
func fixedTime(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// newGate returns a gate of the tests.
func newGate(ns, name string, state gatingv1alpha1.GateState, schedules ...gatingv1alpha1.GateSchedule) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatingv1alpha1.GateSpec{Default: state, Window: &metav1.Duration{Duration: time.Hour}, Schedules: schedules}}
}

// fridays is the schedule of a change freeze on Fridays in Berlin.
var fridays = gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleClose, Cron: "0 0 * * FRI",
	Duration: metav1.Duration{Duration: 24 * time.Hour}, TimeZone: "Europe/Berlin"}

// seedGates creates, in two new namespaces, labelled with the first: a
// gate opened by a request, one closed by its schedule, one the controller
// has not decided yet, and one opened by default.
func seedGates(t *testing.T, g *WithT) (ns1, ns2 string) {
	ns1, ns2 = twoNamespaces(t)
	seed := map[string]string{"gates.test/seed": ns1}
	approval := newGate(ns1, "approval", gatingv1alpha1.GateClosed)
	approval.Labels, approval.Annotations = seed, map[string]string{gatingv1alpha1.OpenRequestAnnotation: "2030-01-01T10:00:00Z"}
	createWithStatus(g, approval, func() {
		setGateStatus(approval, gate.Decision{Open: true, Message: "Gate scheduled for closing at 2030-01-01T11:00:00Z",
			RequestedAt: fixedTime("2030-01-01T10:00:00Z"), ResetToDefaultAt: fixedTime("2030-01-01T11:00:00Z"),
			NextTransition: fixedTime("2030-01-01T11:00:00Z")})
	})
	freeze := newGate(ns1, "freeze", gatingv1alpha1.GateOpened, fridays)
	freeze.Labels = seed
	createWithStatus(g, freeze, func() {
		setGateStatus(freeze, gate.Decision{Message: "Gate closed by schedule '0 0 * * FRI' (Europe/Berlin), scheduled for opening at 2030-01-04T23:00:00Z",
			NextTransition: fixedTime("2030-01-04T23:00:00Z")})
	})
	pending := newGate(ns1, "pending", gatingv1alpha1.GateClosed)
	pending.Labels = seed
	g.Expect(env.Client.Create(context.Background(), pending)).To(Succeed())
	open := newGate(ns2, "open", gatingv1alpha1.GateOpened)
	open.Labels = seed
	createWithStatus(g, open, func() { setGateStatus(open, gate.Decision{Open: true, Message: "Gate opened by default"}) })
	return ns1, ns2
}

// sameWidth replaces the namespaces ns1 and ns2 in out with names of their
// length, so that tables keep their alignment in the golden files.
func sameWidth(out, ns1, ns2 string) string {
	return strings.NewReplacer(ns1, "namespace1", ns2, "namespace2").Replace(out)
}

func TestGetGates(t *testing.T) {
	g := NewWithT(t)
	ns1, ns2 := seedGates(t, g)
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "the gates of a namespace", args: []string{"get", "gates", "-n", ns1}, golden: "get-gates"},
		{name: "every namespace", args: []string{"get", "gate", "-A", "-l", "gates.test/seed=" + ns1}, golden: "get-gates-all-namespaces"},
		{name: "without a header", args: []string{"get", "gates", "-n", ns1, "--no-header"}, golden: "get-gates-no-header"},
		{name: "among all objects", args: []string{"get", "all", "-n", ns1}, golden: "get-gates-in-all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, sameWidth(out, ns1, ns2))
		})
	}
	t.Run("by the Opened condition", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "gates", "-n", ns1, "--status-selector", "opened=false", "--no-header")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix("freeze "))
		g.Expect(strings.Count(out, "\n")).To(Equal(1), out)
	})
	t.Run("as YAML", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "gates", "-n", ns1, "-o", "yaml")
		g.Expect(err).NotTo(HaveOccurred())
		var list struct {
			APIVersion, Kind string
			Items            []gatingv1alpha1.Gate
		}
		g.Expect(yaml.UnmarshalStrict([]byte(out), &list)).To(Succeed(), out)
		g.Expect(list.Kind).To(Equal("List"))
		g.Expect(list.Items).To(HaveLen(3))
		g.Expect(list.Items[0].Kind).To(Equal(gatingv1alpha1.GateKind))
		g.Expect(list.Items[0].Status.NextTransition.UTC().Format(time.RFC3339)).To(Equal("2030-01-01T11:00:00Z"))
		g.Expect(list.Items[1].Spec.Schedules).To(Equal([]gatingv1alpha1.GateSchedule{fridays}))
	})
}

// TestGetGatesWatch: --watch prints the gates' own columns for every
// change.
func TestGetGatesWatch(t *testing.T) {
	g := NewWithT(t)
	ns1, _ := seedGates(t, g)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs([]string{"get", "gates", "-n", ns1, "--watch", "--kubeconfig", kubeconfig})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	g.Eventually(out.String).Should(MatchRegexp(`^NAME\s+OPENED\s+MESSAGE\s+NEXT\s+AGE\n`))

	var pending gatingv1alpha1.Gate
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns1, Name: "pending"}, &pending)).To(Succeed())
	setGateStatus(&pending, gate.Decision{Message: "Gate closed by default, scheduled for opening at 2030-01-02T08:00:00Z",
		NextTransition: fixedTime("2030-01-02T08:00:00Z")})
	g.Expect(env.Client.Status().Update(ctx, &pending)).To(Succeed())
	g.Eventually(out.String).Should(MatchRegexp(`\npending\s+False\s+Gate closed by default, scheduled for opening at 2030-01-02T08:00:00Z\s+2030-01-02T08:00:00Z\s+\S+\n`))

	g.Expect(env.Client.Delete(ctx, &pending)).To(Succeed())
	g.Eventually(out.String).Should(MatchRegexp(`\npending\s+Deleted\s+\S+\n`))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}

// TestGateStatus shows a gate with the objects that name it, in its
// namespace and in another, and leaves out those that name another gate.
func TestGateStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns1, ns2 := twoNamespaces(t)
	sre := newGate(ns1, "sre", gatingv1alpha1.GateClosed)
	sre.Annotations = map[string]string{gatingv1alpha1.OpenRequestAnnotation: "2030-01-01T12:00:00Z"}
	createWithStatus(g, sre, func() {
		setGateStatus(sre, gate.Decision{Message: "Gate closed by default, scheduled for opening at 2030-01-01T12:00:00Z",
			NextTransition: fixedTime("2030-01-01T12:00:00Z")})
	})
	interval := metav1.Duration{Duration: time.Minute}
	source := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "app"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: interval, Gates: []meta.NamespacedObjectReference{{Name: "sre"}}}}
	createWithStatus(g, source, func() {
		conditions.MarkTrue(source, meta.BlockedCondition, meta.GateClosedReason, "Fetching is blocked, gate '%s/sre' is closed.", ns1)
	})
	ks := func(ns, name string, gates ...meta.NamespacedObjectReference) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: kustomizev1.KustomizationSpec{
			Interval: interval, SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app", Namespace: ns1}, Gates: gates}}
	}
	web := ks(ns2, "web", meta.NamespacedObjectReference{Name: "sre", Namespace: ns1})
	createWithStatus(g, web, func() {
		conditions.MarkFalse(web, meta.ApprovedCondition, meta.GateClosedReason, "Reconciliation is waiting approval, gate '%s/sre' is closed.", ns1)
	})
	for _, obj := range []client.Object{
		ks(ns1, "db", meta.NamespacedObjectReference{Name: "ghost"}, meta.NamespacedObjectReference{Name: "sre", Namespace: ns1}),
		ks(ns2, "other", meta.NamespacedObjectReference{Name: "sre"}), // ns2/sre, another gate
		ks(ns1, "free"),
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	quiet := newGate(ns2, "quiet", gatingv1alpha1.GateOpened, fridays, gatingv1alpha1.GateSchedule{Action: gatingv1alpha1.ScheduleOpen,
		Cron: "0 9 * * MON-THU", Duration: metav1.Duration{Duration: 90 * time.Minute}})
	quiet.Spec.Suspend = true
	g.Expect(env.Client.Create(ctx, quiet)).To(Succeed())

	t.Run("with its consumers", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "gate", "status", "sre", "-n", ns1)
		g.Expect(err).NotTo(HaveOccurred())
		expectGolden(t, g, "gate-status", sameWidth(out, ns1, ns2))
	})
	t.Run("not evaluated, suspended, without consumers", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "gate", "status", "quiet", "-n", ns2)
		g.Expect(err).NotTo(HaveOccurred())
		expectGolden(t, g, "gate-status-not-evaluated", sameWidth(out, ns1, ns2))
	})
	t.Run("a missing gate says who waits for it", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "gate", "status", "ghost", "-n", ns1)
		g.Expect(err).To(MatchError(ContainSubstring("Gate " + ns1 + "/ghost does not exist, and a missing gate counts as closed: 1 object names it")))
		_, _, err = run(t, "gate", "status", "ghost", "-n", ns2)
		g.Expect(err).To(MatchError(ContainSubstring("Gate " + ns2 + "/ghost does not exist, and a missing gate counts as closed: no object names it")))
	})
}

// TestGateRequest opens and closes gates: without a gating controller the
// request is written and the wait times out; with one (simulated), the
// command prints the state the request brings.
func TestGateRequest(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	t.Run("without a gating controller, the request is written and the wait times out", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, newGate(ns, "manual", gatingv1alpha1.GateClosed))).To(Succeed())
		before := time.Now().Truncate(time.Second)
		out, _, err := run(t, "gate", "open", "manual", "--for", "2h", "--reason", "hotfix 1.2.1", "-n", ns, "--timeout", "1s")
		after := time.Now()
		g.Expect(err).To(MatchError(MatchRegexp(`^Gate ` + ns + `/manual did not take the open request of \S+Z within 1s: is the gating controller running\?`)))
		g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		var manual gatingv1alpha1.Gate
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "manual"}, &manual)).To(Succeed())
		requested, err := time.Parse(time.RFC3339, manual.Annotations[gatingv1alpha1.OpenRequestAnnotation])
		g.Expect(err).NotTo(HaveOccurred(), "the annotation is an RFC 3339 time")
		g.Expect(requested).To(BeTemporally(">=", before))
		g.Expect(requested).To(BeTemporally("<=", after))
		g.Expect(manual.Annotations[gatingv1alpha1.OpenRequestAnnotation]).To(HaveSuffix("Z"), "in UTC")
		g.Expect(manual.Annotations).NotTo(HaveKey(gatingv1alpha1.CloseRequestAnnotation))
		g.Expect(manual.Annotations).To(HaveKeyWithValue(gatingv1alpha1.OpenReasonAnnotation, "hotfix 1.2.1"))
		g.Expect(manual.Spec.Window).To(Equal(&metav1.Duration{Duration: 2 * time.Hour}))
		g.Expect(out).To(Equal("✚ Gate " + ns + "/manual: open requested at " + requested.UTC().Format(time.RFC3339) + ", for 2h\n" +
			"◎ waiting for Gate " + ns + "/manual to take the request\n"))
	})
	t.Run("a controller takes an open request of the past", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, newGate(ns, "approval", gatingv1alpha1.GateClosed))).To(Succeed())
		fakeGatingController(t, client.ObjectKey{Namespace: ns, Name: "approval"}, false)
		at := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Second)
		out, _, err := run(t, "gate", "open", "approval", "--at", at.In(time.FixedZone("CET", 3600)).Format(time.RFC3339), "-n", ns, "--timeout", "30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(Equal("✚ Gate " + ns + "/approval: open requested at " + at.Format(time.RFC3339) + ", for 1h\n" +
			"◎ waiting for Gate " + ns + "/approval to take the request\n" +
			"✔ Gate " + ns + "/approval: Gate scheduled for closing at " + at.Add(time.Hour).Format(time.RFC3339) + "\n"))
		var approval gatingv1alpha1.Gate
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "approval"}, &approval)).To(Succeed())
		g.Expect(approval.Annotations[gatingv1alpha1.OpenRequestAnnotation]).To(Equal(at.Format(time.RFC3339)))
		g.Expect(approval.IsOpened()).To(BeTrue())

		out, _, err = run(t, "gate", "close", "approval", "-n", ns, "--timeout", "30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(HaveSuffix("✔ Gate " + ns + "/approval: Gate close requested\n"))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "approval"}, &approval)).To(Succeed())
		g.Expect(approval.IsOpened()).To(BeFalse())
		g.Expect(approval.Status.RequestedAt.Time).To(BeTemporally(">", at))
	})
	t.Run("a controller plans an open request of the future", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, newGate(ns, "release", gatingv1alpha1.GateClosed))).To(Succeed())
		fakeGatingController(t, client.ObjectKey{Namespace: ns, Name: "release"}, false)
		at := time.Now().UTC().Add(time.Hour).Truncate(time.Second).Format(time.RFC3339)
		out, _, err := run(t, "gate", "open", "release", "--at", at, "--for", "30m", "-n", ns, "--timeout", "30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(Equal("✚ Gate " + ns + "/release: open requested at " + at + " (planned), for 30m\n" +
			"◎ waiting for Gate " + ns + "/release to take the request\n" +
			"✔ Gate " + ns + "/release: Gate closed by default, scheduled for opening at " + at + "\n"))
	})
	t.Run("requests that cannot be in force are refused", func(t *testing.T) {
		held := newGate(ns, "held", gatingv1alpha1.GateClosed)
		closedAt := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
		held.Annotations = map[string]string{gatingv1alpha1.CloseRequestAnnotation: closedAt}
		sleeping := newGate(ns, "sleeping", gatingv1alpha1.GateOpened)
		sleeping.Spec.Suspend = true
		for _, obj := range []client.Object{held, sleeping} {
			NewWithT(t).Expect(env.Client.Create(ctx, obj)).To(Succeed())
		}
		ago := func(d time.Duration) string { return time.Now().UTC().Add(-d).Format(time.RFC3339) }
		for _, tt := range []struct {
			name, wantErr string
			args          []string
		}{
			{"an --at that is no time", `invalid --at "tomorrow": write an RFC 3339 time such as 2026-03-27T08:00:00Z`, []string{"open", "held", "--at", "tomorrow"}},
			{"an --at without its zone", `invalid --at "2030-01-01T10:00:00": write an RFC 3339 time`, []string{"open", "held", "--at", "2030-01-01T10:00:00"}},
			{"a zero --for", "--for must be a positive duration", []string{"close", "held", "--for", "0s"}},
			{"a request that has lapsed", "Gate " + ns + "/held: --at " + ago(3*time.Hour) + " is more than the gate's window (1h) ago",
				[]string{"open", "held", "--at", ago(3 * time.Hour)}},
			{"a request that a later one overrides", "Gate " + ns + "/held: its request close.gate.fluxcd.io/requestedAt=" + closedAt + " wins over this one",
				[]string{"open", "held", "--at", ago(5 * time.Minute)}},
			{"a suspended gate", "Gate " + ns + "/sleeping is suspended, so it takes no request: resume it with `windlass resume gate sleeping -n " + ns + "`",
				[]string{"close", "sleeping"}},
			{"a gate that does not exist", "Gate " + ns + "/nothing not found: check its name and -n", []string{"open", "nothing"}},
			{"an unknown action", `unknown action "ajar" for "windlass gate": choose one of close, open, status`, []string{"ajar", "held"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				g := NewWithT(t)
				out, _, err := run(t, append(append([]string{"gate"}, tt.args...), "-n", ns, "--timeout", "1s")...)
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
				g.Expect(out).To(BeEmpty())
			})
		}
		g := NewWithT(t)
		var latest gatingv1alpha1.Gate
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(held), &latest)).To(Succeed())
		g.Expect(latest.Annotations).To(Equal(map[string]string{gatingv1alpha1.CloseRequestAnnotation: closedAt}), "nothing was written")
		g.Expect(latest.Spec.Window).To(Equal(&metav1.Duration{Duration: time.Hour}))
	})
}

// TestCreateGate applies a gate: without a gating controller the wait
// times out; with one (simulated) the command prints the gate's state.
func TestCreateGate(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	t.Run("without a gating controller", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "create", "gate", "lonely", "-n", ns, "--timeout", "1s")
		g.Expect(err).To(MatchError("Gate " + ns + "/lonely was not evaluated within 1s: is the gating controller running? (windlass controller runs it)" +
			" (Gate " + ns + "/lonely stays in the cluster, and its controller retries: create it again with other flags, or delete it with `windlass delete gate lonely -n " + ns + "`)"))
		g.Expect(out).To(Equal("✚ Gate " + ns + "/lonely applied\n◎ waiting for Gate " + ns + "/lonely to be evaluated\n"))
		var lonely gatingv1alpha1.Gate
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lonely"}, &lonely)).To(Succeed())
		g.Expect(lonely.Spec.Default).To(Equal(gatingv1alpha1.GateClosed))
		g.Expect(lonely.Spec.Window).To(Equal(&metav1.Duration{Duration: time.Hour}))
		g.Expect(lonely.Spec.Interval).To(Equal(&metav1.Duration{Duration: 30 * time.Second}))
		g.Expect(lonely.ManagedFields).To(ContainElement(HaveField("Manager", fieldOwner)))
	})
	t.Run("with a gating controller, created then updated", func(t *testing.T) {
		g := NewWithT(t)
		key := client.ObjectKey{Namespace: ns, Name: "weekly"}
		fakeGatingController(t, key, false)
		out, _, err := run(t, "create", "gate", "weekly", "-n", ns, "--default", "opened", "--window", "2h",
			"--schedule", "close 0 0 * * FRI for 24h in Europe/Berlin", "--timeout", "30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		var weekly gatingv1alpha1.Gate
		g.Expect(env.Client.Get(ctx, key, &weekly)).To(Succeed())
		g.Expect(weekly.Spec.Schedules).To(Equal([]gatingv1alpha1.GateSchedule{fridays}))
		g.Expect(weekly.Spec.Window).To(Equal(&metav1.Duration{Duration: 2 * time.Hour}))
		g.Expect(out).To(Equal("✚ Gate " + ns + "/weekly applied\n◎ waiting for Gate " + ns + "/weekly to be evaluated\n" +
			"✔ Gate " + ns + "/weekly: " + conditions.Message(&weekly, gatingv1alpha1.OpenedCondition) + "\n"))
		g.Expect(out).To(MatchRegexp(`Gate (opened by default|closed by schedule '0 0 \* \* FRI' \(Europe/Berlin\)), scheduled for`))

		out, _, err = run(t, "create", "gate", "weekly", "-n", ns, "--default", "opened", "--window", "3h", "--timeout", "30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(HaveSuffix("✔ Gate " + ns + "/weekly: Gate opened by default\n"))
		g.Expect(env.Client.Get(ctx, key, &weekly)).To(Succeed())
		g.Expect(weekly.Spec.Schedules).To(BeEmpty())
		g.Expect(weekly.Status.ObservedGeneration).To(Equal(weekly.Generation))
	})
}

// TestGateVerbs: reconcile, suspend, resume, export and delete work on
// gates as on the other kinds.
func TestGateVerbs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	key := client.ObjectKey{Namespace: ns, Name: "verbs"}
	verbs := newGate(ns, "verbs", gatingv1alpha1.GateClosed, fridays)
	verbs.Labels = map[string]string{"team": "sre"}
	g.Expect(env.Client.Create(ctx, verbs)).To(Succeed())
	fakeGatingController(t, key, true)

	out, _, err := run(t, "reconcile", "gate", "verbs", "-n", ns, "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`✔ Gate ` + ns + `/verbs reconciled: Gate closed (by default|by schedule)`))

	out, _, err = run(t, "suspend", "gate", "verbs", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("✔ Gate " + ns + "/verbs suspended\n"))
	g.Expect(env.Client.Get(ctx, key, verbs)).To(Succeed())
	g.Expect(verbs.Spec.Suspend).To(BeTrue())

	out, _, err = run(t, "resume", "gates", "verbs", "-n", ns, "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("✔ Gate " + ns + "/verbs reconciled: "))

	// The requests of `gate open` and `gate close` are the command line's,
	// not the user's: export leaves them out, and keeps the user's own.
	requests := fmt.Sprintf(`{"metadata":{"annotations":{%q:"2026-01-01T00:00:00Z",%q:"2026-01-02T00:00:00Z","team.example.com/owner":"sre"}}}`,
		gatingv1alpha1.OpenRequestAnnotation, gatingv1alpha1.CloseRequestAnnotation)
	g.Expect(env.Client.Patch(ctx, verbs, client.RawPatch(types.MergePatchType, []byte(requests)))).To(Succeed())
	out, _, err = run(t, "export", "gate", "verbs", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectGolden(t, g, "gate-export", strings.ReplaceAll(out, ns, "NS"))

	out, _, err = run(t, "delete", "gate", "verbs", "-n", ns, "--silent")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(HaveSuffix("✔ Gate " + ns + "/verbs deleted\n"))
}
