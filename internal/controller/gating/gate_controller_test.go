package gating

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// createGate creates the Gate manifest declares in ns.
func createGate(g *WithT, ns, manifest string) *gatingv1alpha1.Gate {
	gate := &gatingv1alpha1.Gate{}
	g.Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf(manifest, ns)), gate)).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), gate)).To(Succeed())
	return gate
}

// annotate sets annotation key of gate to value.
func annotate(g *WithT, gate *gatingv1alpha1.Gate, key, value string) {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, key, value)
	g.Expect(env.Client.Patch(context.Background(), gate, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}

// waitOpened waits until the gate's Opened condition has status and a
// message that starts with prefix, for its generation.
func waitOpened(g *WithT, gate *gatingv1alpha1.Gate, status metav1.ConditionStatus, prefix string) *gatingv1alpha1.Gate {
	return testutil.WaitFor(g, env.Client, gate, func(got *gatingv1alpha1.Gate) bool {
		c := conditions.Get(got, gatingv1alpha1.OpenedCondition)
		return got.Status.ObservedGeneration == got.Generation && c != nil && c.Status == status && strings.HasPrefix(c.Message, prefix)
	}, gatingv1alpha1.RequestInvalidCondition)
}

// rfc3339 formats t as the annotations want it.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// gateMetric returns windlass_gate_open of the gate.
func gateMetric(g *WithT, gate *gatingv1alpha1.Gate) float64 {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "windlass_gate_open" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labels(m)["name"] == gate.Name && labels(m)["exported_namespace"] == gate.Namespace {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestGate_SREApproval is RFC story 1: a gate closed by default, opened by
// an annotation for its window, closed again by itself when the window
// lapses, on time; and closed ahead of the window by a close request.
func TestGate_SREApproval(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	gate := createGate(g, ns, `
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: sre-approval, namespace: %s}
spec: {interval: 1h, default: closed, window: 4s}
`)
	waitOpened(g, gate, metav1.ConditionFalse, "Gate closed by default")
	g.Expect(gateMetric(g, gate)).To(Equal(0.0))

	opened := time.Now().Truncate(time.Second)
	annotate(g, gate, gatingv1alpha1.OpenRequestAnnotation, rfc3339(opened))
	got := waitOpened(g, gate, metav1.ConditionTrue, "Gate scheduled for closing at "+rfc3339(opened.Add(4*time.Second)))
	g.Expect(got.Status.RequestedAt.Time).To(BeTemporally("==", opened))
	g.Expect(got.Status.ResetToDefaultAt.Time).To(BeTemporally("==", opened.Add(4*time.Second)))
	g.Expect(got.Status.NextTransition.Time).To(BeTemporally("==", opened.Add(4*time.Second)))
	g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(gateMetric(g, gate)).To(Equal(1.0))
	g.Eventually(func() []string { return testutil.EventMessages(g, env.Client, gate, gatingv1alpha1.GateKind) }).Should(
		ContainElement("GateOpened: Gate opened by the open request of " + rfc3339(opened) + ": Gate scheduled for closing at " + rfc3339(opened.Add(4*time.Second))))

	// The window lapses: the gate closes by itself, at its time (the
	// interval is an hour).
	closed := waitOpened(g, gate, metav1.ConditionFalse, "Gate closed by default")
	c := conditions.Get(closed, gatingv1alpha1.OpenedCondition)
	g.Expect(c.LastTransitionTime.Time).To(BeTemporally(">=", opened.Add(4*time.Second)))
	g.Expect(c.LastTransitionTime.Time).To(BeTemporally("<", opened.Add(7*time.Second)), "closed on time, not at the interval")
	g.Expect(closed.Status.RequestedAt).To(BeNil())
	g.Expect(closed.Status.NextTransition).To(BeNil())

	// Opened again, then closed ahead of its window.
	reopened := time.Now().Truncate(time.Second)
	annotate(g, gate, gatingv1alpha1.OpenRequestAnnotation, rfc3339(reopened))
	waitOpened(g, gate, metav1.ConditionTrue, "Gate scheduled for closing at")
	annotate(g, gate, gatingv1alpha1.CloseRequestAnnotation, rfc3339(reopened.Add(time.Second)))
	got = waitOpened(g, gate, metav1.ConditionFalse, "Gate close requested")
	g.Expect(got.Status.RequestedAt.Time).To(BeTemporally("==", reopened.Add(time.Second)))
}

// TestGate_MaintenanceWindow is RFC story 1 bis: a gate open by default,
// closed by a request for its 24h window.
func TestGate_MaintenanceWindow(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	gate := createGate(g, ns, `
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: maintenance, namespace: %s}
spec: {interval: 30s, default: opened, window: 24h}
`)
	waitOpened(g, gate, metav1.ConditionTrue, "Gate opened by default")
	start := time.Now().Truncate(time.Second)
	annotate(g, gate, gatingv1alpha1.CloseRequestAnnotation, rfc3339(start))
	got := waitOpened(g, gate, metav1.ConditionFalse, "Gate scheduled for opening at "+rfc3339(start.Add(24*time.Hour)))
	g.Expect(got.Status.ResetToDefaultAt.Time).To(BeTemporally("==", start.Add(24*time.Hour)))
}

// TestGate_PlannedRelease: a request in the future opens the gate at its
// time, with nothing else happening.
func TestGate_PlannedRelease(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	at := time.Now().Truncate(time.Second).Add(3 * time.Second)
	gate := createGate(g, ns, `
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: release
  namespace: %s
  annotations: {open.gate.fluxcd.io/requestedAt: "`+rfc3339(at)+`"}
spec: {interval: 1h, default: closed, window: 1h}
`)
	got := waitOpened(g, gate, metav1.ConditionFalse, "Gate closed by default, scheduled for opening at "+rfc3339(at))
	g.Expect(got.Status.NextTransition.Time).To(BeTemporally("==", at))
	got = waitOpened(g, gate, metav1.ConditionTrue, "Gate scheduled for closing at "+rfc3339(at.Add(time.Hour)))
	g.Expect(conditions.Get(got, gatingv1alpha1.OpenedCondition).LastTransitionTime.Time).To(BeTemporally(">=", at))
}

// TestGate_NoDeployFriday: a schedule active now decides the state, in
// its time zone.
func TestGate_Schedule(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	gate := createGate(g, ns, `
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: freeze, namespace: %s}
spec:
  default: opened
  schedules:
  - {action: close, cron: "* * * * *", duration: 24h, timeZone: Europe/Berlin}
`)
	got := waitOpened(g, gate, metav1.ConditionFalse, "Gate closed by schedule '* * * * *' (Europe/Berlin)")
	g.Expect(got.Spec.Window).To(Equal(&metav1.Duration{Duration: time.Hour}), "the window defaults to 1h")
	g.Expect(got.Spec.Interval).To(Equal(&metav1.Duration{Duration: 30 * time.Second}), "the interval defaults to 30s")
}

// TestGate_BadInput: an unparseable request is ignored and said, in a
// condition and a Warning event, and the gate stays decided; an invalid
// spec stalls the gate closed, even when it is open by default and asked
// open; a negative window is refused by the API server.
func TestGate_BadInput(t *testing.T) {
	ctx := context.Background()
	t.Run("an unparseable request", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.CreateNamespace(t)
		gate := createGate(g, ns, `
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: approval
  namespace: %s
  annotations: {open.gate.fluxcd.io/requestedAt: "tomorrow at noon"}
spec: {default: closed}
`)
		got := testutil.WaitFor(g, env.Client, gate, func(got *gatingv1alpha1.Gate) bool {
			return conditions.IsTrue(got, gatingv1alpha1.RequestInvalidCondition)
		}, gatingv1alpha1.RequestInvalidCondition)
		g.Expect(conditions.IsFalse(got, gatingv1alpha1.OpenedCondition)).To(BeTrue(), "never opened by mistake")
		g.Expect(conditions.Message(got, gatingv1alpha1.OpenedCondition)).To(Equal("Gate closed by default"))
		g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
		g.Expect(conditions.Reason(got, meta.ReadyCondition)).To(Equal(gatingv1alpha1.InvalidRequestReason))
		g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring(`"tomorrow at noon" is not an RFC 3339 time`))
		g.Eventually(func() []string { return testutil.WarningReasons(g, env.Client, gate, gatingv1alpha1.GateKind) }).Should(
			ContainElement(gatingv1alpha1.InvalidRequestReason))

		annotate(g, gate, gatingv1alpha1.OpenRequestAnnotation, rfc3339(time.Now()))
		got = waitOpened(g, gate, metav1.ConditionTrue, "Gate scheduled for closing at")
		g.Expect(conditions.Get(got, gatingv1alpha1.RequestInvalidCondition)).To(BeNil())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
	})
	for _, tt := range []struct {
		name, spec, reason, message string
	}{
		{name: "a zero window", spec: `{default: opened, window: 0s}`, reason: gatingv1alpha1.InvalidWindowReason,
			message: "spec.window must be a positive duration, not 0s"},
		{name: "an unknown time zone", spec: `{default: opened, schedules: [{action: open, cron: "0 9 * * *", duration: 1h, timeZone: Europe/Atlantis}]}`,
			reason: gatingv1alpha1.InvalidScheduleReason, message: `spec.schedules[0]: timeZone "Europe/Atlantis" is not an IANA time zone`},
		{name: "an invalid cron", spec: `{default: opened, schedules: [{action: close, cron: "every friday", duration: 24h}]}`,
			reason: gatingv1alpha1.InvalidScheduleReason, message: `spec.schedules[0]: cron "every friday"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			gate := createGate(g, ns, `
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: broken
  namespace: %s
  annotations: {open.gate.fluxcd.io/requestedAt: "`+rfc3339(time.Now())+`"}
spec: `+tt.spec+`
`)
			got := testutil.WaitFor(g, env.Client, gate, func(got *gatingv1alpha1.Gate) bool {
				return conditions.IsTrue(got, meta.StalledCondition)
			}, gatingv1alpha1.RequestInvalidCondition)
			g.Expect(conditions.Reason(got, meta.StalledCondition)).To(Equal(tt.reason))
			g.Expect(conditions.Message(got, meta.StalledCondition)).To(HavePrefix(tt.message))
			g.Expect(conditions.IsFalse(got, gatingv1alpha1.OpenedCondition)).To(BeTrue(), "closed, though open by default and asked open")
			g.Expect(conditions.Message(got, gatingv1alpha1.OpenedCondition)).To(HavePrefix("Gate closed: " + tt.message))
		})
	}
	t.Run("a negative window is refused by the API server", func(t *testing.T) {
		g := NewWithT(t)
		gate := &gatingv1alpha1.Gate{}
		g.Expect(yaml.Unmarshal([]byte(`{metadata: {name: negative, namespace: default}, spec: {window: -1h}}`), gate)).To(Succeed())
		err := env.Client.Create(ctx, gate)
		g.Expect(err).To(MatchError(ContainSubstring("spec.window")))
	})
}
