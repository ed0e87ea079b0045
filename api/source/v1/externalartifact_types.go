package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// ExternalArtifactKind is the kind name of ExternalArtifact.
const ExternalArtifactKind = "ExternalArtifact"

// ExternalArtifactSpec is the desired state of an ExternalArtifact.
type ExternalArtifactSpec struct {
	// SourceRef names the object the artifact is produced for: an
	// ArtifactGenerator (source.extensions.fluxcd.io) for the artifacts
	// Windlass generates, or the object of another controller that
	// publishes artifacts in the same format.
	// +optional
	SourceRef *meta.NamespacedObjectKindReference `json:"sourceRef,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for the producer to publish a new artifact; while one is closed the
	// last artifact stays published and Blocked is True. Windlass's
	// ArtifactGenerator honours them; another producer must do so itself.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// ExternalArtifactStatus is the observed state of an ExternalArtifact,
// written by its producer.
type ExternalArtifactStatus struct {
	// Artifact is the artifact the producer published.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// Conditions of the ExternalArtifact.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ExternalArtifact is the Schema for the external artifacts API: an
// artifact, in the format of the source kinds', that something other than
// the source controller produces (an ArtifactGenerator, or another
// controller). Kustomizations (spec.sourceRef) and HelmReleases
// (spec.chartRef) use it as they use a source.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ea,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Source",type="string",JSONPath=".spec.sourceRef.name"
type ExternalArtifact struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExternalArtifactSpec   `json:"spec,omitempty"`
	Status ExternalArtifactStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ExternalArtifactList is a list of ExternalArtifacts.
type ExternalArtifactList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExternalArtifact `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ExternalArtifact{}, &ExternalArtifactList{})
}

// GetConditions returns the object's conditions.
func (in *ExternalArtifact) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *ExternalArtifact) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// IsSuspended reports false: no controller reconciles an ExternalArtifact,
// its producer writes it.
func (in *ExternalArtifact) IsSuspended() bool { return false }

// GetGates returns the gates the producer waits behind (spec.gates).
func (in *ExternalArtifact) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// GetArtifact returns the object's artifact, or nil.
func (in *ExternalArtifact) GetArtifact() *meta.Artifact { return in.Status.Artifact }
