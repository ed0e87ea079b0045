package kustomize

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// maxHistory is how many snapshots status.history keeps.
const maxHistory = 5

// recordHistory adds the outcome of the run that just ended to
// status.history: runs with the same outcome (revision, inventory and Ready
// reason) share one snapshot and are counted; the newest comes first.
func recordHistory(obj *kustomizev1.Kustomization, took time.Duration) {
	revision := obj.Status.LastAttemptedRevision
	if revision == "" {
		return
	}
	status := conditions.Reason(obj, meta.ReadyCondition)
	digest := outcomeDigest(obj)
	now := metav1.Now()
	h := obj.Status.History
	if len(h) > 0 && h[0].Digest == digest && h[0].LastReconciledStatus == status {
		h[0].LastReconciled = now
		h[0].LastReconciledDuration = metav1.Duration{Duration: took}
		h[0].TotalReconciliations++
		return
	}
	snap := kustomizev1.Snapshot{
		Digest:                 digest,
		FirstReconciled:        now,
		LastReconciled:         now,
		LastReconciledDuration: metav1.Duration{Duration: took},
		LastReconciledStatus:   status,
		TotalReconciliations:   1,
		Metadata:               map[string]string{"revision": revision},
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
