package v1

import "github.com/windlass-dev/windlass/api/meta"

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *GitRepository) IsSuspended() bool {
	return in.Spec.Suspend
}

// GetGates returns the gates the object waits behind (spec.gates).
func (in *GitRepository) GetGates() []meta.NamespacedObjectReference {
	return in.Spec.Gates
}
