// Package meta holds the types and constants that every Windlass API group
// shares: the artifact a source produces, object references, the
// reconcile-request annotation, and the condition types and reasons that
// follow kstatus.
//
// +kubebuilder:object:generate=true
package meta
