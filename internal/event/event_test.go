package event

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sink keeps what it is forwarded.
type sink struct{ events []Event }

func (s *sink) Forward(_ context.Context, _ client.Object, e Event) { s.events = append(s.events, e) }

func TestRecorder(t *testing.T) {
	g := NewWithT(t)
	k8s := events.NewFakeRecorder(10)
	fwd := &sink{}
	r := &Recorder{Kubernetes: k8s, Sink: fwd}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	ctx := context.Background()

	r.Warning(ctx, obj, "GitOperationFailed", "main@sha1:1", "fetching 'https://git:p a\"ss@host/repo?token=t0k' failed")
	r.Normal(ctx, obj, "NewArtifact", "main@sha1:2", "")
	r.Record(ctx, obj, Event{Type: TypeNormal, Reason: "Applied", Message: "applied", Revision: "main@sha1:3",
		Metadata: map[string]string{"url": "https://user:s3cret@host/x"}})

	g.Expect(k8s.Events).To(HaveLen(2), "an event without a message is dropped")
	first := <-k8s.Events
	g.Expect(first).To(HavePrefix("Warning GitOperationFailed"))
	g.Expect(first).NotTo(ContainSubstring("p a\"ss"))
	g.Expect(first).NotTo(ContainSubstring("t0k"))
	g.Expect(<-k8s.Events).To(Equal("Normal Applied applied"))

	g.Expect(fwd.events).To(HaveLen(2))
	g.Expect(fwd.events[0].Revision).To(Equal("main@sha1:1"))
	g.Expect(fwd.events[0].Message).NotTo(ContainSubstring("p a\"ss"))
	g.Expect(fwd.events[1].Revision).To(Equal("main@sha1:3"))
	g.Expect(fwd.events[1].Metadata["url"]).To(Equal("https://host/x"))

	var nilRecorder *Recorder
	nilRecorder.Normal(ctx, obj, "R", "", "a nil recorder records nothing and does not panic")
	nilRecorder.Forward(ctx, obj, Event{Message: "nor does Forward"})
}

// TestRecorderForward: Forward gives an event, redacted, to the Sink
// alone; an empty one is dropped.
func TestRecorderForward(t *testing.T) {
	g := NewWithT(t)
	k8s := events.NewFakeRecorder(10)
	fwd := &sink{}
	r := &Recorder{Kubernetes: k8s, Sink: fwd}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	r.Forward(context.Background(), obj, Event{Type: TypeNormal, Reason: "NewArtifact", Revision: "main@sha1:1",
		Message: "stored artifact from 'https://user:s3cret@host/repo'", Metadata: map[string]string{"url": "https://user:s3cret@host/x"}})
	r.Forward(context.Background(), obj, Event{Type: TypeNormal, Reason: "NewArtifact"})
	g.Expect(k8s.Events).To(BeEmpty(), "no Kubernetes event")
	g.Expect(fwd.events).To(HaveLen(1))
	g.Expect(fwd.events[0].Message).To(Equal("stored artifact from 'https://host/repo'"))
	g.Expect(fwd.events[0].Metadata["url"]).To(Equal("https://host/x"))
	g.Expect(fwd.events[0].Revision).To(Equal("main@sha1:1"))
}

// TestRecorderOncePerRun: under WithRun, a second event about the same
// object with the type and reason of one recorded earlier in the run is
// not recorded in Kubernetes (which would fold it into a series of the
// first, its message lost), but still reaches the sink; another object,
// type or reason, or another run, records.
func TestRecorderOncePerRun(t *testing.T) {
	g := NewWithT(t)
	k8s := events.NewFakeRecorder(10)
	fwd := &sink{}
	r := &Recorder{Kubernetes: k8s, Sink: fwd}
	app := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "1"}}
	db := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "2"}}

	run := WithRun(context.Background())
	r.Normal(run, app, "Succeeded", "", "resolved to 1.0.0")
	r.Normal(run, app, "Succeeded", "", "Ready: resolved to 1.0.0")
	r.Normal(run, db, "Succeeded", "", "resolved to 2.0.0")
	r.Warning(run, app, "Succeeded", "", "a warning is another type")
	r.Normal(run, app, "Progressing", "", "another reason")
	r.Normal(WithRun(context.Background()), app, "Succeeded", "", "the next run")
	r.Normal(context.Background(), app, "Succeeded", "", "outside a run")
	r.Normal(context.Background(), app, "Succeeded", "", "outside a run")

	close(k8s.Events)
	var recorded []string
	for e := range k8s.Events {
		recorded = append(recorded, e)
	}
	g.Expect(recorded).To(Equal([]string{"Normal Succeeded resolved to 1.0.0", "Normal Succeeded resolved to 2.0.0",
		"Warning Succeeded a warning is another type", "Normal Progressing another reason", "Normal Succeeded the next run",
		"Normal Succeeded outside a run", "Normal Succeeded outside a run"}))
	var forwarded []string
	for _, e := range fwd.events {
		forwarded = append(forwarded, e.Message)
	}
	g.Expect(forwarded).To(Equal([]string{"resolved to 1.0.0", "Ready: resolved to 1.0.0", "resolved to 2.0.0",
		"a warning is another type", "another reason", "the next run", "outside a run", "outside a run"}))
}

func TestTeeForwardsToEverySinkThatIsThere(t *testing.T) {
	g := NewWithT(t)
	var none *sink
	g.Expect(Tee()).To(BeNil())
	g.Expect(Tee(nil, none)).To(BeNil(), "a typed nil is no sink")
	one := &sink{}
	g.Expect(Tee(none, one)).To(BeIdenticalTo(one))
	a, b := &sink{}, &sink{}
	Tee(a, nil, b).Forward(context.Background(), nil, Event{Reason: "Applied"})
	g.Expect(a.events).To(HaveLen(1))
	g.Expect(b.events).To(HaveLen(1))
}
