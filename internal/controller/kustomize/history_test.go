package kustomize

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

func TestRecordHistory(t *testing.T) {
	g := NewWithT(t)
	obj := &kustomizev1.Kustomization{}
	recordHistory(obj, time.Second)
	g.Expect(obj.Status.History).To(BeEmpty(), "nothing attempted, nothing recorded")

	obj.Status.LastAttemptedRevision = "main@sha1:1"
	conditions.MarkTrue(obj, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "ok")
	recordHistory(obj, time.Second)
	recordHistory(obj, 2*time.Second)
	g.Expect(obj.Status.History).To(HaveLen(1))
	g.Expect(obj.Status.History[0].TotalReconciliations).To(Equal(int64(2)))
	g.Expect(obj.Status.History[0].LastReconciledDuration.Duration).To(Equal(2 * time.Second))
	g.Expect(obj.Status.History[0].Metadata).To(HaveKeyWithValue("revision", "main@sha1:1"))

	conditions.MarkFalse(obj, meta.ReadyCondition, kustomizev1.BuildFailedReason, "broken")
	recordHistory(obj, time.Second)
	g.Expect(obj.Status.History).To(HaveLen(2))
	g.Expect(obj.Status.History[0].LastReconciledStatus).To(Equal(kustomizev1.BuildFailedReason))

	for i := range 10 {
		obj.Status.LastAttemptedRevision = "main@sha1:" + string(rune('a'+i))
		recordHistory(obj, time.Second)
	}
	g.Expect(obj.Status.History).To(HaveLen(maxHistory))
	g.Expect(obj.Status.History[0].Metadata["revision"]).To(Equal("main@sha1:j"))
}
