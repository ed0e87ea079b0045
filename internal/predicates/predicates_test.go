package predicates

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

func repo(token string, a *meta.Artifact) *sourcev1.GitRepository {
	r := &sourcev1.GitRepository{}
	if token != "" {
		r.Annotations = map[string]string{meta.ReconcileRequestAnnotation: token}
	}
	r.Status.Artifact = a
	return r
}

func TestReconcileRequested(t *testing.T) {
	g := NewWithT(t)
	p := ReconcileRequested{}
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: repo("", nil), ObjectNew: repo("a", nil)})).To(BeTrue())
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: repo("a", nil), ObjectNew: repo("b", nil)})).To(BeTrue())
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: repo("a", nil), ObjectNew: repo("a", nil)})).To(BeFalse())
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: repo("a", nil), ObjectNew: repo("", nil)})).To(BeFalse())
}

func TestArtifactChanged(t *testing.T) {
	a1 := &meta.Artifact{Revision: "main@sha1:1", Digest: "sha256:1"}
	a2 := &meta.Artifact{Revision: "main@sha1:1", Digest: "sha256:2"}
	tests := []struct {
		name     string
		old, new *meta.Artifact
		want     bool
	}{
		{"appears", nil, a1, true},
		{"goes", a1, nil, true},
		{"same", a1, a1.DeepCopy(), false},
		{"new digest", a1, a2, true},
		{"none", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(ArtifactChanged{}.Update(event.UpdateEvent{ObjectOld: repo("", tt.old), ObjectNew: repo("", tt.new)})).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(ArtifactChanged{}.Create(event.CreateEvent{Object: repo("", a1)})).To(BeTrue())
	g.Expect(ArtifactChanged{}.Create(event.CreateEvent{Object: repo("", nil)})).To(BeFalse())
}

func TestBecameReady(t *testing.T) {
	withReady := func(status metav1.ConditionStatus, msg string) *sourcev1.GitRepository {
		r := &sourcev1.GitRepository{}
		r.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Message: msg}}
		return r
	}
	tests := []struct {
		name     string
		old, new *sourcev1.GitRepository
		want     bool
	}{
		{"turns ready", withReady(metav1.ConditionFalse, "x"), withReady(metav1.ConditionTrue, "a"), true},
		{"new revision applied", withReady(metav1.ConditionTrue, "a"), withReady(metav1.ConditionTrue, "b"), true},
		{"nothing new", withReady(metav1.ConditionTrue, "a"), withReady(metav1.ConditionTrue, "a"), false},
		{"turns not ready", withReady(metav1.ConditionTrue, "a"), withReady(metav1.ConditionFalse, "a"), false},
		{"first status", &sourcev1.GitRepository{}, withReady(metav1.ConditionTrue, "a"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(BecameReady{}.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new})).To(Equal(tt.want))
		})
	}
}

func TestArtifactMoved(t *testing.T) {
	g := NewWithT(t)
	repo := func(url string) *sourcev1.GitRepository {
		r := &sourcev1.GitRepository{}
		if url != "" {
			r.Status.Artifact = &meta.Artifact{URL: url, Revision: "main@sha1:abc", Digest: "sha256:01"}
		}
		return r
	}
	moved := ArtifactMoved{}
	g.Expect(moved.Update(event.UpdateEvent{ObjectOld: repo("http://10.0.0.1:9090/a.tar.gz"), ObjectNew: repo("http://10.0.0.2:9090/a.tar.gz")})).To(BeTrue())
	g.Expect(moved.Update(event.UpdateEvent{ObjectOld: repo("http://10.0.0.1:9090/a.tar.gz"), ObjectNew: repo("http://10.0.0.1:9090/a.tar.gz")})).To(BeFalse())
	g.Expect(moved.Update(event.UpdateEvent{ObjectOld: repo(""), ObjectNew: repo("http://10.0.0.2:9090/a.tar.gz")})).To(BeFalse(), "a first artifact is ArtifactChanged's")
	g.Expect(moved.Create(event.CreateEvent{Object: repo("http://x/a")})).To(BeFalse())
	g.Expect(moved.Delete(event.DeleteEvent{Object: repo("http://x/a")})).To(BeFalse())
}
