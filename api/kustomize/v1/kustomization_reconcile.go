package v1

import "time"

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *Kustomization) IsSuspended() bool {
	return in.Spec.Suspend
}

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *Kustomization) GetRequeueAfter() time.Duration {
	return in.Spec.Interval.Duration
}
