// Package v1beta3 holds the notification.toolkit.fluxcd.io/v1beta3 API:
// Provider, which says where and how notifications are sent, and Alert,
// which says which events go to a Provider. Both are static objects: they
// have no status, and exist to be read when an event arrives. v1beta3 is
// the version Windlass stores; v1beta2 manifests are served too (package
// v1beta2).
//
// +kubebuilder:object:generate=true
// +groupName=notification.toolkit.fluxcd.io
package v1beta3

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "notification.toolkit.fluxcd.io", Version: "v1beta3"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
