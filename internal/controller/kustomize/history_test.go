package kustomize

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

func TestRecordHistory(t *testing.T) {
	g := NewWithT(t)
	obj := &kustomizev1.Kustomization{}
	record := func(took time.Duration) { recordHistory(obj, metav1.Now(), took, countedRuns{}) }
	record(time.Second)
	g.Expect(obj.Status.History).To(BeEmpty(), "nothing attempted, nothing recorded")

	obj.Status.LastAttemptedRevision = "main@sha1:1"
	conditions.MarkTrue(obj, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "ok")
	record(time.Second)
	record(2 * time.Second)
	g.Expect(obj.Status.History).To(HaveLen(1))
	g.Expect(obj.Status.History[0].TotalReconciliations).To(Equal(int64(2)))
	g.Expect(obj.Status.History[0].LastReconciledDuration.Duration).To(Equal(2 * time.Second))
	g.Expect(obj.Status.History[0].Metadata).To(HaveKeyWithValue("revision", "main@sha1:1"))

	conditions.MarkFalse(obj, meta.ReadyCondition, kustomizev1.BuildFailedReason, "broken")
	record(time.Second)
	g.Expect(obj.Status.History).To(HaveLen(2))
	g.Expect(obj.Status.History[0].LastReconciledStatus).To(Equal(kustomizev1.BuildFailedReason))

	for i := range 10 {
		obj.Status.LastAttemptedRevision = "main@sha1:" + string(rune('a'+i))
		record(time.Second)
	}
	g.Expect(obj.Status.History).To(HaveLen(maxHistory))
	g.Expect(obj.Status.History[0].Metadata["revision"]).To(Equal("main@sha1:j"))
}

// TestRecordRun: a run that repeats the newest snapshot of the history
// and changes nothing else is counted in memory, not written; the count is
// written with the next status write, or once the snapshot is an hour old.
func TestRecordRun(t *testing.T) {
	// step is one run: edit makes its outcome, changed says whether it
	// changed anything else in the status.
	type step struct {
		edit    func(*kustomizev1.Kustomization)
		changed bool
	}
	repeat := step{edit: func(*kustomizev1.Kustomization) {}}
	written := step{edit: func(*kustomizev1.Kustomization) {}, changed: true}
	revision := func(rev string) step {
		return step{edit: func(k *kustomizev1.Kustomization) { k.Status.LastAttemptedRevision = rev }, changed: true}
	}
	tests := []struct {
		name string
		// age is how long ago the newest snapshot was written.
		age   time.Duration
		steps []step
		// check sees the history after the steps, and what stayed counted.
		check func(g *WithT, h []kustomizev1.Snapshot, counted countedRuns)
	}{{
		name: "a repeat that changes nothing is counted, not written", age: time.Minute,
		steps: []step{repeat, repeat},
		check: func(g *WithT, h []kustomizev1.Snapshot, counted countedRuns) {
			g.Expect(h).To(HaveLen(1))
			g.Expect(h[0].TotalReconciliations).To(Equal(int64(3)), "as written before the runs")
			g.Expect(counted.runs).To(Equal(int64(2)))
			g.Expect(counted.took).To(Equal(2 * time.Second))
		},
	}, {
		name: "a run that writes the status writes the count", age: time.Minute,
		steps: []step{repeat, repeat, written},
		check: func(g *WithT, h []kustomizev1.Snapshot, counted countedRuns) {
			g.Expect(h).To(HaveLen(1))
			g.Expect(h[0].TotalReconciliations).To(Equal(int64(6)), "3 written, 2 counted, this one")
			g.Expect(h[0].LastReconciledDuration.Duration).To(Equal(3 * time.Second))
			g.Expect(time.Since(h[0].LastReconciled.Time)).To(BeNumerically("<", time.Minute))
			g.Expect(counted.runs).To(BeZero())
		},
	}, {
		name: "a snapshot written an hour ago is written again", age: historyWriteInterval + time.Second,
		steps: []step{repeat},
		check: func(g *WithT, h []kustomizev1.Snapshot, counted countedRuns) {
			g.Expect(h[0].TotalReconciliations).To(Equal(int64(4)))
			g.Expect(time.Since(h[0].LastReconciled.Time)).To(BeNumerically("<", time.Minute))
			g.Expect(counted.runs).To(BeZero())
		},
	}, {
		name: "a new outcome closes the newest snapshot with its counted runs", age: time.Minute,
		steps: []step{repeat, repeat, revision("main@sha1:2")},
		check: func(g *WithT, h []kustomizev1.Snapshot, counted countedRuns) {
			g.Expect(h).To(HaveLen(2))
			g.Expect(h[0].Metadata).To(HaveKeyWithValue("revision", "main@sha1:2"))
			g.Expect(h[0].TotalReconciliations).To(Equal(int64(1)))
			g.Expect(h[1].TotalReconciliations).To(Equal(int64(5)))
			g.Expect(h[1].LastReconciledDuration.Duration).To(Equal(2*time.Second), "the last counted run's")
			g.Expect(counted.runs).To(BeZero())
		},
	}, {
		name: "a failure that repeats is counted too", age: time.Minute,
		steps: []step{{edit: func(k *kustomizev1.Kustomization) {
			conditions.MarkFalse(k, meta.ReadyCondition, kustomizev1.BuildFailedReason, "broken")
		}, changed: true}, repeat},
		check: func(g *WithT, h []kustomizev1.Snapshot, counted countedRuns) {
			g.Expect(h).To(HaveLen(2))
			g.Expect(h[0].LastReconciledStatus).To(Equal(kustomizev1.BuildFailedReason))
			g.Expect(h[0].TotalReconciliations).To(Equal(int64(1)))
			g.Expect(counted.runs).To(Equal(int64(1)))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
			obj.Status.LastAttemptedRevision = "main@sha1:1"
			conditions.MarkTrue(obj, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "ok")
			written := metav1.NewTime(time.Now().Add(-tt.age))
			obj.Status.History = []kustomizev1.Snapshot{{Digest: outcomeDigest(obj), FirstReconciled: written,
				LastReconciled: written, LastReconciledStatus: kustomizev1.ReconciliationSucceededReason,
				TotalReconciliations: 3, Metadata: map[string]string{"revision": "main@sha1:1"}}}
			r := &KustomizationReconciler{}
			for i, s := range tt.steps {
				s.edit(obj)
				r.recordRun(obj, time.Duration(i+1)*time.Second, func() bool { return !s.changed })
			}
			key := types.NamespacedName{Namespace: "ns", Name: "app"}
			tt.check(g, obj.Status.History, r.unwritten.take(key))
		})
	}
}

// TestCountedRunsOfAnotherSnapshot: runs counted for a snapshot that is no
// longer the newest one (its status was written elsewhere since) are not
// added to the one that is; a forgotten Kustomization's count is dropped.
func TestCountedRunsOfAnotherSnapshot(t *testing.T) {
	g := NewWithT(t)
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	r := &KustomizationReconciler{}
	r.unwritten.count(key, "sha256:old", metav1.Now(), time.Second)
	obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	obj.Status.LastAttemptedRevision = "main@sha1:1"
	conditions.MarkTrue(obj, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "ok")
	obj.Status.History = []kustomizev1.Snapshot{{Digest: outcomeDigest(obj), TotalReconciliations: 7,
		LastReconciledStatus: kustomizev1.ReconciliationSucceededReason}}
	r.recordRun(obj, time.Second, func() bool { return false })
	g.Expect(obj.Status.History[0].TotalReconciliations).To(Equal(int64(8)), "the old snapshot's count is not added")

	r.unwritten.count(key, outcomeDigest(obj), metav1.Now(), time.Second)
	r.forget(key)
	g.Expect(r.unwritten.take(key).runs).To(BeZero())
}
