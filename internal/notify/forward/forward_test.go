package forward

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// inbox records what it is sent.
type inbox struct {
	mu   sync.Mutex
	sent []notify.Message
}

func (b *inbox) Post(_ context.Context, m notify.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, m)
	return nil
}

func (b *inbox) messages() []notify.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]notify.Message(nil), b.sent...)
}

func kustomization(ready metav1.ConditionStatus) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", Labels: map[string]string{"team": "web"},
		Annotations: map[string]string{AnnotationPrefix + "cluster": "prod-eu", "other": "x"}}}
	ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: ready, Reason: "R", LastTransitionTime: metav1.Now()}}
	return ks
}

// TestWire: the wire event names the object with its kind, carries the
// severity, the revision under the kind's group and the object's
// event.toolkit.fluxcd.io annotations.
func TestWire(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	s := &Sink{Scheme: scheme.New(), Controller: "kustomize-controller", Now: func() time.Time { return at }}
	wire, ok := s.Wire(kustomization(metav1.ConditionFalse), event.Event{Type: event.TypeWarning, Reason: "HealthCheckFailed",
		Message: "timeout waiting for Deployment/apps/web", Revision: "main@sha1:abc", Metadata: map[string]string{"cluster": "mine"}})
	g.Expect(ok).To(BeTrue())
	g.Expect(wire.InvolvedObject.Kind).To(Equal("Kustomization"))
	g.Expect(wire.InvolvedObject.APIVersion).To(Equal("kustomize.toolkit.fluxcd.io/v1"))
	g.Expect(wire.Severity).To(Equal(eventv1.SeverityError))
	g.Expect(wire.Timestamp.Time).To(Equal(at))
	g.Expect(wire.ReportingController).To(Equal("kustomize-controller"))
	g.Expect(wire.Metadata).To(Equal(map[string]string{"kustomize.toolkit.fluxcd.io/revision": "main@sha1:abc", "cluster": "mine"}),
		"the event's own metadata wins over the annotation; other annotations are not added")
	rev, found := wire.Revision()
	g.Expect(found).To(BeTrue())
	g.Expect(rev).To(Equal("main@sha1:abc"))
}

// TestSinkResolves: a failure then a recovery of the same object reach an
// error-severity rule as one failure and one resolved message.
func TestSinkResolves(t *testing.T) {
	g := NewWithT(t)
	d := dispatch.New(dispatch.Options{})
	box := &inbox{}
	g.Expect(d.SetRule(dispatch.Rule{Key: "apps/oncall", Namespace: "apps", Severity: dispatch.SeverityError,
		Sources:  []dispatch.Source{{Kind: "Kustomization", Name: "*", MatchLabels: map[string]string{"team": "web"}}},
		Notifier: box, ProviderKey: "apps/pager"})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Run(ctx) }()
	s := &Sink{Dispatcher: d, Scheme: scheme.New(), Controller: "kustomize-controller"}

	s.Forward(ctx, kustomization(metav1.ConditionFalse), event.Event{Type: event.TypeWarning, Reason: "HealthCheckFailed", Message: "unhealthy"})
	s.Forward(ctx, kustomization(metav1.ConditionFalse), event.Event{Type: event.TypeNormal, Reason: "Progressing", Message: "applying"})
	s.Forward(ctx, kustomization(metav1.ConditionTrue), event.Event{Type: event.TypeNormal, Reason: "ReconciliationSucceeded", Message: "applied"})
	g.Eventually(box.messages).Should(HaveLen(2))
	got := box.messages()
	g.Expect(got[0].Message).To(Equal("unhealthy"))
	g.Expect(got[0].Resolves).To(BeFalse())
	g.Expect(got[1].Message).To(Equal("applied"))
	g.Expect(got[1].Resolves).To(BeTrue())
}
