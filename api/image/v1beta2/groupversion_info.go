// Package v1beta2 holds the image.toolkit.fluxcd.io/v1beta2 forms of
// ImageRepository, ImagePolicy and ImageUpdateAutomation, so that manifests
// written for that version apply unchanged. They carry the v1 spec and
// status (the API server stores every object as v1, and no field is
// renamed between the two), and are deprecated.
//
// +kubebuilder:object:generate=true
// +groupName=image.toolkit.fluxcd.io
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "image.toolkit.fluxcd.io", Version: "v1beta2"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
