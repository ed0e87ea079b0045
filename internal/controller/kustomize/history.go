package kustomize

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// maxHistory is how many snapshots status.history keeps.
const maxHistory = 5

// historyWriteInterval is how long the newest snapshot of status.history
// may go unwritten while runs repeat it and change nothing else: such runs
// are counted in memory and written with the next status write that
// something else needs, or once the written snapshot is this old. A
// Kustomization whose runs change nothing then writes its status about
// once an hour instead of at every interval, and a restarted controller,
// or the replica that takes Kustomizations over, writes none for them.
const historyWriteInterval = time.Hour

// recordRun records the run of obj that just ended, which took took, in
// status.history, or only counts it (see historyWriteInterval) when it
// repeats the newest snapshot, that snapshot was written less than
// historyWriteInterval ago, and unchanged tells that the run changed
// nothing else that the status patch would send.
func (r *KustomizationReconciler) recordRun(obj *kustomizev1.Kustomization, took time.Duration, unchanged func() bool) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	now := metav1.Now()
	if h := obj.Status.History; len(h) > 0 && repeatsNewest(obj) &&
		now.Sub(h[0].LastReconciled.Time) < historyWriteInterval && unchanged() {
		r.unwritten.count(key, h[0].Digest, now, took)
		return
	}
	recordHistory(obj, now, took, r.unwritten.take(key))
}

// repeatsNewest tells whether the outcome of obj's run is that of the
// newest snapshot of its history: same revision, inventory and Ready
// reason.
func repeatsNewest(obj *kustomizev1.Kustomization) bool {
	h := obj.Status.History
	return obj.Status.LastAttemptedRevision != "" && len(h) > 0 &&
		h[0].Digest == outcomeDigest(obj) && h[0].LastReconciledStatus == conditions.Reason(obj, meta.ReadyCondition)
}

// recordHistory adds the outcome of the run that just ended at now to
// status.history, with the runs counted since the newest snapshot was
// written: runs with the same outcome (revision, inventory and Ready
// reason) share one snapshot and are counted; the newest comes first.
func recordHistory(obj *kustomizev1.Kustomization, now metav1.Time, took time.Duration, counted countedRuns) {
	if obj.Status.LastAttemptedRevision == "" {
		return
	}
	h := obj.Status.History
	if len(h) > 0 && counted.runs > 0 && h[0].Digest == counted.digest {
		h[0].LastReconciled = counted.last
		h[0].LastReconciledDuration = metav1.Duration{Duration: counted.took}
		h[0].TotalReconciliations += counted.runs
	}
	if repeatsNewest(obj) {
		h[0].LastReconciled = now
		h[0].LastReconciledDuration = metav1.Duration{Duration: took}
		h[0].TotalReconciliations++
		return
	}
	snap := kustomizev1.Snapshot{
		Digest:                 outcomeDigest(obj),
		FirstReconciled:        now,
		LastReconciled:         now,
		LastReconciledDuration: metav1.Duration{Duration: took},
		LastReconciledStatus:   conditions.Reason(obj, meta.ReadyCondition),
		TotalReconciliations:   1,
		Metadata:               map[string]string{"revision": obj.Status.LastAttemptedRevision},
	}
	h = append([]kustomizev1.Snapshot{snap}, h...)
	if len(h) > maxHistory {
		h = h[:maxHistory]
	}
	obj.Status.History = h
}

// outcomeDigest identifies what a run applied: the revision and the
// inventory.
func outcomeDigest(obj *kustomizev1.Kustomization) string {
	sum := sha256.New()
	sum.Write([]byte(obj.Status.LastAttemptedRevision))
	if inv := obj.Status.Inventory; inv != nil {
		for _, e := range inv.Entries {
			sum.Write([]byte{0})
			sum.Write([]byte(e.ID + "/" + e.Version))
		}
	}
	return "sha256:" + hex.EncodeToString(sum.Sum(nil))
}

// countedRuns are the runs of a Kustomization that repeated the newest
// snapshot of its history, of digest, and are not written yet.
type countedRuns struct {
	digest string
	runs   int64
	last   metav1.Time
	took   time.Duration
}

// unwrittenRuns holds the countedRuns of each Kustomization. What it
// holds is lost with the process, or when another replica takes the
// Kustomization over: the history then counts fewer runs than ran.
type unwrittenRuns struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]countedRuns
}

// count adds a run of key, which ended at end and took took, repeating
// the snapshot of digest.
func (u *unwrittenRuns) count(key types.NamespacedName, digest string, end metav1.Time, took time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.runs == nil {
		u.runs = map[types.NamespacedName]countedRuns{}
	}
	c := u.runs[key]
	if c.digest != digest {
		c = countedRuns{digest: digest}
	}
	c.runs++
	c.last, c.took = end, took
	u.runs[key] = c
}

// take returns the runs of key counted so far, and forgets them.
func (u *unwrittenRuns) take(key types.NamespacedName) countedRuns {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.runs[key]
	delete(u.runs, key)
	return c
}
