package v1

import (
	"time"

	"github.com/windlass-dev/windlass/api/meta"
)

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *Kustomization) IsSuspended() bool {
	return in.Spec.Suspend
}

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *Kustomization) GetRequeueAfter() time.Duration {
	return in.Spec.Interval.Duration
}

// GetGates returns the gates the object waits behind (spec.gates).
func (in *Kustomization) GetGates() []meta.NamespacedObjectReference {
	return in.Spec.Gates
}
