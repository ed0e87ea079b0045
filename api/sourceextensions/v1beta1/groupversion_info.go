// Package v1beta1 holds the source.extensions.fluxcd.io/v1beta1 API: the
// ArtifactGenerator, which composes the artifacts of sources into
// ExternalArtifacts, and splits one source into several.
//
// +kubebuilder:object:generate=true
// +groupName=source.extensions.fluxcd.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "source.extensions.fluxcd.io", Version: "v1beta1"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
