package v1

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *GitRepository) IsSuspended() bool {
	return in.Spec.Suspend
}
