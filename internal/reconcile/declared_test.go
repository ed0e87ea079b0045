package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestAdmit: what the runner runs before a kind's steps, in order: the
// kind's CheckSpec (so a spec it cannot serve stalls even behind a closed
// gate), then the gates in the role of the kind's registry row (a
// GitRepository is a source: Blocked), then Held for a held run.
func TestAdmit(t *testing.T) {
	unserved := outcome.Stall(meta.UnsupportedProviderReason, errors.New("spec.provider 'azure' is not served"))
	rebuilt := errors.New("rebuilt the held artifact")
	tests := []struct {
		name       string
		gates      []string
		checkSpec  error
		held       bool // the kind has a Held hook
		noCross    bool
		wantErr    error  // exactly this error, when set
		wantKind   string // "hold", "stall" or "" for none
		wantReason string
		wantHeld   bool
		wantBlock  bool
	}{
		{name: "no gates, nothing to check: admitted"},
		{name: "open gate: admitted, no Blocked", gates: []string{"open"}},
		{name: "closed gate: held, Blocked", gates: []string{"open", "shut"},
			wantKind: "hold", wantReason: meta.GateClosedReason, wantBlock: true},
		{name: "a spec not served stalls before the gates are read", gates: []string{"shut"}, checkSpec: unserved,
			wantErr: unserved},
		{name: "Held decides how a held run ends", gates: []string{"shut"}, held: true,
			wantErr: rebuilt, wantHeld: true, wantBlock: true},
		{name: "Held is not called for an open gate", gates: []string{"open"}, held: true},
		{name: "a gate in another namespace, refused", gates: []string{"other/open"}, noCross: true,
			wantKind: "stall", wantReason: meta.AccessDeniedReason, wantBlock: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme.New()).
				WithObjects(testutil.Gate("ns", "open", true), testutil.Gate("ns", "shut", false), testutil.Gate("other", "open", true)).Build()
			var heldCalled bool
			kind := Kind[*sourcev1.GitRepository]{
				Name:      sourcev1.GitRepositoryKind,
				CheckSpec: func(*sourcev1.GitRepository) error { return tt.checkSpec },
			}
			if tt.held {
				kind.Held = func(_ context.Context, _ *sourcev1.GitRepository, held error) error {
					heldCalled = true
					g.Expect(outcome.IsHolding(held)).To(BeTrue())
					return rebuilt
				}
			}
			r := &Runner[*sourcev1.GitRepository]{
				Client: c, Events: &event.Recorder{Kubernetes: events.NewFakeRecorder(10)}, NoCrossNamespaceRefs: tt.noCross, Kind: kind,
			}
			obj := newRepo()
			for _, name := range tt.gates {
				ref := meta.NamespacedObjectReference{Name: name}
				if ns, n, ok := strings.Cut(name, "/"); ok {
					ref = meta.NamespacedObjectReference{Namespace: ns, Name: n}
				}
				obj.Spec.Gates = append(obj.Spec.Gates, ref)
			}

			err := r.Admit(context.Background(), obj)

			switch {
			case tt.wantErr != nil:
				g.Expect(err).To(BeIdenticalTo(tt.wantErr))
			case tt.wantKind == "":
				g.Expect(err).NotTo(HaveOccurred())
			case tt.wantKind == "hold":
				g.Expect(outcome.IsHolding(err)).To(BeTrue(), "%v", err)
				g.Expect(outcome.ReasonOf(err, "")).To(Equal(tt.wantReason))
			case tt.wantKind == "stall":
				var stalling *outcome.Stalling
				g.Expect(errors.As(err, &stalling)).To(BeTrue(), "%v", err)
				g.Expect(stalling.Reason).To(Equal(tt.wantReason))
			}
			g.Expect(heldCalled).To(Equal(tt.wantHeld))
			g.Expect(conditions.Has(obj, meta.BlockedCondition)).To(Equal(tt.wantBlock))
			g.Expect(conditions.Has(obj, meta.ApprovedCondition)).To(BeFalse(), "a source is Blocked, never Approved")
		})
	}
}

// TestAdmitWithoutGates: a kind whose registry row has no gates is
// admitted without reading any (the Gate kind itself).
func TestAdmitWithoutGates(t *testing.T) {
	g := NewWithT(t)
	r := &Runner[*gatingv1alpha1.Gate]{
		Client: fake.NewClientBuilder().WithScheme(scheme.New()).Build(),
		Kind:   Kind[*gatingv1alpha1.Gate]{Name: gatingv1alpha1.GateKind},
	}
	g.Expect(r.Admit(context.Background(), testutil.Gate("ns", "g", false))).To(Succeed())
}
