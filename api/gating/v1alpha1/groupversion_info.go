// Package v1alpha1 holds the gating.toolkit.fluxcd.io/v1alpha1 API: the Gate,
// which people and schedules open and close, and which sources and appliers
// name in spec.gates to hold changes back while it is closed.
//
// +kubebuilder:object:generate=true
// +groupName=gating.toolkit.fluxcd.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "gating.toolkit.fluxcd.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
