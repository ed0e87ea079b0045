// Package v1 holds the notification.toolkit.fluxcd.io/v1 API: Receiver,
// an incoming webhook that asks for the reconciliation of the objects it
// names (or opens and closes Gates) when a signed or authenticated request
// arrives.
//
// +kubebuilder:object:generate=true
// +groupName=notification.toolkit.fluxcd.io
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "notification.toolkit.fluxcd.io", Version: "v1"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
