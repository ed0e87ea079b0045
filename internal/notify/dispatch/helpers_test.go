package dispatch

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// recorder is a Notifier that records every post, and answers with post
// when it is set.
type recorder struct {
	mu    sync.Mutex
	calls []notify.Message
	post  func(ctx context.Context, m notify.Message) error
}

func (r *recorder) Post(ctx context.Context, m notify.Message) error {
	r.mu.Lock()
	r.calls = append(r.calls, m)
	post := r.post
	r.mu.Unlock()
	if post != nil {
		return post(ctx, m)
	}
	return nil
}

func (r *recorder) posted() []notify.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Message(nil), r.calls...)
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set sets the clock to t.
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// queued returns the messages waiting for provider.
func queued(d *Dispatcher, provider string) []notify.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []notify.Message
	if q := d.queues[provider]; q != nil {
		for _, item := range q.items {
			out = append(out, item.msg)
		}
	}
	return out
}

func event(kind, namespace, name, severity, reason, message string) eventv1.Event {
	return eventv1.Event{
		InvolvedObject:      corev1.ObjectReference{Kind: kind, Namespace: namespace, Name: name},
		Severity:            severity,
		Reason:              reason,
		Message:             message,
		ReportingController: "kustomize-controller",
	}
}

func ksError(name, message string) eventv1.Event {
	return event("Kustomization", "apps", name, eventv1.SeverityError, "ArtifactFailed", message)
}

func ksReady(name string) eventv1.Event {
	return event("Kustomization", "apps", name, eventv1.SeverityInfo, "ReconciliationSucceeded", "Reconciliation finished")
}

// allKustomizations is a rule for every Kustomization in "apps".
func allKustomizations(key, severity, provider string, n notify.Notifier) Rule {
	return Rule{Key: key, Namespace: "apps", Severity: severity, Notifier: n, ProviderKey: provider,
		Sources: []Source{{Kind: "Kustomization", Name: "*"}}}
}
