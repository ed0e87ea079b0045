package v1beta1

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// ArtifactGeneratorKind is the kind name of ArtifactGenerator.
const ArtifactGeneratorKind = "ArtifactGenerator"

// ReconcileAnnotation suspends an ArtifactGenerator when it is "Disabled"
// (in any case), as spec.suspend does for other kinds; "Enabled", or no
// annotation, resumes it.
const ReconcileAnnotation = "source.extensions.fluxcd.io/reconcile"

// ReconcileDisabled is the value of ReconcileAnnotation that suspends.
const ReconcileDisabled = "Disabled"

// GeneratorLabel, on a generated ExternalArtifact, holds the UID of the
// ArtifactGenerator that generated it.
const GeneratorLabel = "source.extensions.fluxcd.io/generator"

// Copy strategies.
const (
	// OverwriteStrategy copies files over what earlier copies wrote.
	OverwriteStrategy = "Overwrite"
	// MergeStrategy merges YAML files as Helm merges values files.
	MergeStrategy = "Merge"
	// ExtractStrategy unpacks tarballs (.tar.gz, .tgz).
	ExtractStrategy = "Extract"
)

// Reasons of the ArtifactGenerator's conditions.
const (
	// SourceFetchFailedReason: a source's artifact could not be read.
	SourceFetchFailedReason = "SourceFetchFailed"
	// ValidationFailedReason: the spec can never work (a duplicate alias or
	// artifact name, an alias that no source has).
	ValidationFailedReason = "ValidationFailed"
)

// DefaultInterval is how often an ArtifactGenerator is reconciled without
// a change of its sources: the API has no spec.interval.
const DefaultInterval = time.Hour

// ArtifactGeneratorSpec is the desired state of an ArtifactGenerator.
// +kubebuilder:validation:XValidation:rule="has(self.pathPattern) && size(self.pathPattern) > 0 || self.artifacts.all(a, a.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$') && a.name.size() <= 253)",message="artifact names must be valid Kubernetes object names when pathPattern is not set"
type ArtifactGeneratorSpec struct {
	// Sources are the sources whose artifacts the artifacts are made of,
	// each named by an alias.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +required
	Sources []SourceReference `json:"sources"`

	// OutputArtifacts are the artifacts to generate, each published as an
	// ExternalArtifact of the generator's namespace.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +required
	OutputArtifacts []OutputArtifact `json:"artifacts"`

	// CommonMetadata are labels and annotations set on every generated
	// ExternalArtifact (over those of the same keys, but never over the
	// generator's own labels).
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// PathPattern, "@<alias>/<pattern>", generates the artifacts once per
	// folder of the source that the pattern matches: each "{name}" of the
	// pattern matches one folder name, and may be used in the artifacts'
	// names and copy operations.
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$"
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	PathPattern string `json:"pathPattern,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this generator to reconcile: it publishes no new artifact while
	// one is closed (its ExternalArtifacts keep their last one). A missing
	// gate counts as closed. The namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// SourceReference names a source of an ArtifactGenerator.
type SourceReference struct {
	// Alias names the source in the copy operations ("@alias/..."): unique
	// in the generator, lower case letters, digits, "_" and "-".
	// +kubebuilder:validation:Pattern="^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=63
	// +required
	Alias string `json:"alias"`

	// Name of the source.
	// +kubebuilder:validation:Pattern="^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the source; defaults to the generator's.
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Kind of the source.
	// +kubebuilder:validation:Enum=Bucket;GitRepository;OCIRepository;HelmChart;ExternalArtifact
	// +required
	Kind string `json:"kind"`
}

// OutputArtifact is one artifact an ArtifactGenerator generates.
type OutputArtifact struct {
	// Name of the generated ExternalArtifact; with pathPattern, it may hold
	// "{name}" placeholders.
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Name string `json:"name"`

	// Revision, "@alias", makes the artifact's revision that of the
	// source's artifact; without it, the revision is latest@<digest> of
	// the artifact's content.
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$"
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Revision string `json:"revision,omitempty"`

	// OriginRevision, "@alias", records the origin revision of the
	// source's artifact (its org.opencontainers.image.revision metadata,
	// else its revision) in the artifact's metadata under that key.
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$"
	// +kubebuilder:validation:MaxLength=64
	// +optional
	OriginRevision string `json:"originRevision,omitempty"`

	// Copy are the copy operations that make the artifact, in order: a
	// later one writes over the files of an earlier one.
	// +kubebuilder:validation:MinItems=1
	// +required
	Copy []CopyOperation `json:"copy"`
}

// CopyOperation copies files from a source into an artifact.
type CopyOperation struct {
	// From is "@alias/path": a file, a folder (copied as a folder), or a
	// glob pattern (* and ? within a name, ** across folders; "dir/**"
	// copies the folder's contents).
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$"
	// +kubebuilder:validation:MaxLength=1024
	// +required
	From string `json:"from"`

	// To is "@artifact/path": a file, or a folder when it ends with "/".
	// +kubebuilder:validation:Pattern="^@artifact/([^/]{0,1}|[^./][^/]|[.][^./]|[^/]{3,})(/([^/]{0,1}|[^./][^/]|[.][^./]|[^/]{3,}))*$"
	// +kubebuilder:validation:MaxLength=1024
	// +required
	To string `json:"to"`

	// Exclude are glob patterns of the files and folders From matches that
	// are not copied, from the source's root or from the folders of From
	// before its first wildcard; a pattern without "/" matches a name at
	// any depth.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Exclude []string `json:"exclude,omitempty"`

	// Strategy is Overwrite (the default), Merge (YAML files merged as Helm
	// merges values files) or Extract (tarballs unpacked).
	// +kubebuilder:validation:Enum=Overwrite;Merge;Extract
	// +optional
	Strategy string `json:"strategy,omitempty"`
}

// CommonMetadata are labels and annotations of generated objects.
type CommonMetadata struct {
	// Annotations to set.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels to set.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ExternalArtifactReference is a generated ExternalArtifact and the
// digest of its artifact.
type ExternalArtifactReference struct {
	// Name of the ExternalArtifact.
	// +required
	Name string `json:"name"`

	// Namespace of the ExternalArtifact.
	// +required
	Namespace string `json:"namespace"`

	// Digest of its artifact.
	// +required
	Digest string `json:"digest"`

	// Filename is the name of the artifact's file.
	// +required
	Filename string `json:"filename"`
}

// ArtifactGeneratorStatus is the observed state of an ArtifactGenerator.
type ArtifactGeneratorStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`

	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the ArtifactGenerator.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Inventory are the ExternalArtifacts generated.
	// +optional
	Inventory []ExternalArtifactReference `json:"inventory,omitempty"`

	// ObservedSourcesDigest is the digest of the sources' artifacts the
	// inventory was generated from.
	// +optional
	ObservedSourcesDigest string `json:"observedSourcesDigest,omitempty"`
}

// ArtifactGenerator is the Schema for the artifactgenerators API: it
// composes the artifacts of several sources into ExternalArtifacts, or
// splits one source into several, by copy operations.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ag,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type ArtifactGenerator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ArtifactGeneratorSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ArtifactGeneratorStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ArtifactGeneratorList is a list of ArtifactGenerators.
type ArtifactGeneratorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ArtifactGenerator `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ArtifactGenerator{}, &ArtifactGeneratorList{})
}

// GetConditions returns the object's conditions.
func (in *ArtifactGenerator) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *ArtifactGenerator) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetRequeueAfter returns how often the generator is reconciled without a
// change: DefaultInterval.
func (in *ArtifactGenerator) GetRequeueAfter() time.Duration { return DefaultInterval }

// IsSuspended reports whether the ReconcileAnnotation suspends the
// generator.
func (in *ArtifactGenerator) IsSuspended() bool {
	return strings.EqualFold(in.GetAnnotations()[ReconcileAnnotation], ReconcileDisabled)
}

// GetGates returns the gates the object waits behind (spec.gates).
func (in *ArtifactGenerator) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// SetObservedGeneration records the generation the controller acted on.
func (in *ArtifactGenerator) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *ArtifactGenerator) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *ArtifactGenerator) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
