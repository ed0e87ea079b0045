package conditions

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

func TestSetKeepsTransitionTimeUntilStatusChanges(t *testing.T) {
	g := NewWithT(t)
	obj := &sourcev1.GitRepository{}
	obj.Generation = 3

	MarkTrue(obj, "Ready", "Succeeded", "stored %s", "x")
	first := Get(obj, "Ready")
	g.Expect(first).NotTo(BeNil())
	g.Expect(first.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(first.Message).To(Equal("stored x"))
	first.LastTransitionTime = metav1.Unix(100, 0)

	MarkTrue(obj, "Ready", "Succeeded", "stored y")
	g.Expect(Get(obj, "Ready").LastTransitionTime).To(Equal(metav1.Unix(100, 0)))
	g.Expect(Message(obj, "Ready")).To(Equal("stored y"))

	MarkFalse(obj, "Ready", "Failed", "broken")
	g.Expect(Get(obj, "Ready").LastTransitionTime).NotTo(Equal(metav1.Unix(100, 0)))
	g.Expect(IsFalse(obj, "Ready")).To(BeTrue())
	g.Expect(Reason(obj, "Ready")).To(Equal("Failed"))
}

func TestDeleteAndHas(t *testing.T) {
	g := NewWithT(t)
	obj := &sourcev1.GitRepository{}
	MarkTrue(obj, "FetchFailed", "GitOperationFailed", "down")
	MarkTrue(obj, "Ready", "Succeeded", "ok")
	Delete(obj, "FetchFailed")
	Delete(obj, "NotThere")
	g.Expect(Has(obj, "FetchFailed")).To(BeFalse())
	g.Expect(IsTrue(obj, "Ready")).To(BeTrue())
	g.Expect(obj.Status.Conditions).To(HaveLen(1))
}

func TestInProgress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mark   func(*sourcev1.GitRepository)
		wanted bool
	}{
		{"no Reconciling", func(*sourcev1.GitRepository) {}, false},
		{"progressing", func(o *sourcev1.GitRepository) {
			MarkTrue(o, meta.ReconcilingCondition, meta.ProgressingReason, "cloning")
		}, true},
		{"waiting", func(o *sourcev1.GitRepository) {
			MarkTrue(o, meta.ReconcilingCondition, "ArtifactFailed", "no artifact yet")
		}, true},
		{"retrying after a failure", func(o *sourcev1.GitRepository) {
			MarkTrue(o, meta.ReconcilingCondition, meta.ProgressingWithRetryReason, "retrying")
		}, false},
		{"done", func(o *sourcev1.GitRepository) { MarkFalse(o, meta.ReconcilingCondition, meta.SucceededReason, "done") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &sourcev1.GitRepository{}
			tc.mark(obj)
			NewWithT(t).Expect(InProgress(obj)).To(Equal(tc.wanted))
		})
	}
}

func TestMessageIsBounded(t *testing.T) {
	g := NewWithT(t)
	obj := &sourcev1.GitRepository{}
	MarkFalse(obj, "Ready", "Failed", "%s", strings.Repeat("x", 10000))
	g.Expect(len(Message(obj, "Ready"))).To(Equal(maxMessageLength))
	g.Expect(Message(obj, "Ready")).To(HaveSuffix("..."))
}

func TestMessageHasNoCredentials(t *testing.T) {
	g := NewWithT(t)
	obj := &sourcev1.GitRepository{}
	MarkFalse(obj, "Ready", "Failed", "cloning https://bob:hunter2@git.example.com/r.git?token=abc: refused")
	g.Expect(Message(obj, "Ready")).To(Equal("cloning https://git.example.com/r.git: refused"))
}
