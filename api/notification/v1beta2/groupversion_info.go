// Package v1beta2 serves the notification.toolkit.fluxcd.io/v1beta2 API of
// the Provider and Alert manifests written before v1beta3. Its spec is the
// v1beta3 spec, so objects are stored as v1beta3 with no conversion. The
// v1beta2 status (conditions, observedGeneration) is accepted for
// compatibility but never written: Providers and Alerts are static objects
// since v1beta3.
//
// +kubebuilder:object:generate=true
// +groupName=notification.toolkit.fluxcd.io
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "notification.toolkit.fluxcd.io", Version: "v1beta2"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
