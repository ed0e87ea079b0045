package v1

import "github.com/windlass-dev/windlass/api/meta"

// Selector selects the objects a patch or an ignore rule applies to.
type Selector struct {
	// Group of the objects.
	// +optional
	Group string `json:"group,omitempty"`
	// Version of the objects.
	// +optional
	Version string `json:"version,omitempty"`
	// Kind of the objects.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Namespace of the objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the objects, a regular expression.
	// +optional
	Name string `json:"name,omitempty"`
	// AnnotationSelector selects objects by annotations.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	// LabelSelector selects objects by labels.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// Patch is a strategic merge patch or a JSON 6902 patch, and the objects it
// applies to.
type Patch struct {
	// Patch is the content of the patch, in YAML or JSON.
	// +required
	Patch string `json:"patch"`
	// Target selects the objects to patch; a strategic merge patch may name
	// its target itself.
	// +optional
	Target *Selector `json:"target,omitempty"`
}

// Image overrides the name, tag or digest of container images.
type Image struct {
	// Name of the image to override.
	// +required
	Name string `json:"name"`
	// NewName replaces the image's name.
	// +optional
	NewName string `json:"newName,omitempty"`
	// NewTag replaces the image's tag.
	// +optional
	NewTag string `json:"newTag,omitempty"`
	// Digest replaces the image's tag with a digest.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// CommonMetadata are labels and annotations added to every applied object.
type CommonMetadata struct {
	// Annotations to add.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels to add.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// PostBuild substitutes variables in the built manifests.
type PostBuild struct {
	// Substitute holds variables and their values; they override those of
	// SubstituteFrom.
	// +optional
	Substitute map[string]string `json:"substitute,omitempty"`

	// SubstituteFrom names ConfigMaps and Secrets whose data are variables,
	// later ones overriding earlier ones.
	// +optional
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`

	// SubstituteStrategy: WithVariables (default) substitutes only when there
	// are variables; Always substitutes even without, so that defaults apply.
	// +kubebuilder:validation:Enum=WithVariables;Always
	// +optional
	SubstituteStrategy string `json:"substituteStrategy,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret of variables.
type SubstituteReference struct {
	// Kind of the object: ConfigMap or Secret.
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +required
	Kind string `json:"kind"`

	// Name of the object, in the Kustomization's namespace.
	// +kubebuilder:validation:Pattern="^(([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])\\.)*([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])$"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Optional tolerates a missing object.
	// +kubebuilder:default:=false
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// Decryption tells how to decrypt secrets in the built manifests.
type Decryption struct {
	// Provider of the decryption: sops.
	// +kubebuilder:validation:Enum=sops
	// +required
	Provider string `json:"provider"`

	// SecretRef names a Secret of private keys: age keys in *.agekey
	// entries, OpenPGP keys in *.asc entries.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// ServiceAccountName is the identity used for cloud key services.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// CustomHealthCheck judges the health of objects of one kind with CEL
// expressions over the object.
type CustomHealthCheck struct {
	// APIVersion of the objects: a group and version, or a group with '*'.
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the objects.
	// +required
	Kind string `json:"kind"`

	// Current is true when the object is healthy.
	// +optional
	Current string `json:"current,omitempty"`

	// InProgress is true while the object is progressing.
	// +optional
	InProgress string `json:"inProgress,omitempty"`

	// Failed is true when the object has failed.
	// +optional
	Failed string `json:"failed,omitempty"`
}

// IgnoreRule excludes fields of the selected objects from apply and drift
// detection.
type IgnoreRule struct {
	// Paths are JSON pointers to the fields to ignore.
	// +required
	Paths []string `json:"paths"`

	// Target selects the objects; empty means every object.
	// +optional
	Target *Selector `json:"target,omitempty"`
}
