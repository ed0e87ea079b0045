// Package v1beta2 serves the source.toolkit.fluxcd.io/v1beta2 API of the
// OCIRepository and Bucket manifests written before v1 (the OCI artifacts
// RFC uses it). Its schema is the v1 schema, so objects are stored as v1
// with no conversion.
//
// +kubebuilder:object:generate=true
// +groupName=source.toolkit.fluxcd.io
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "source.toolkit.fluxcd.io", Version: "v1beta2"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
