package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// KustomizationKind is the kind name of Kustomization.
const KustomizationKind = "Kustomization"

// Deletion policies of a Kustomization.
const (
	DeletionPolicyMirrorPrune        = "MirrorPrune"
	DeletionPolicyDelete             = "Delete"
	DeletionPolicyWaitForTermination = "WaitForTermination"
	DeletionPolicyOrphan             = "Orphan"
)

// KustomizationSpec is the desired state of a Kustomization.
type KustomizationSpec struct {
	// CommonMetadata adds labels and annotations to every applied object.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// DependsOn lists the Kustomizations that must be ready first.
	// +optional
	DependsOn []meta.DependencyReference `json:"dependsOn,omitempty"`

	// Decryption decrypts SOPS-encrypted secrets.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`

	// Duration fields: every one carries the same XValidation marker (spec
	// fields also the Pattern), so that no value that overflows a Go
	// time.Duration is stored; why this suffices is told above
	// GitRepositorySpec.Interval in api/source/v1/gitrepository_types.go.

	// Interval at which the source is re-applied, which also corrects drift.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// RetryInterval is the interval after a failure; defaults to Interval.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`

	// KubeConfig reaches a remote cluster to apply to.
	// +optional
	KubeConfig *meta.KubeConfigReference `json:"kubeConfig,omitempty"`

	// Path to the folder of the kustomization in the source; defaults to
	// its root.
	// +optional
	Path string `json:"path,omitempty"`

	// PostBuild substitutes variables after the build.
	// +optional
	PostBuild *PostBuild `json:"postBuild,omitempty"`

	// Prune deletes the objects that left the source.
	// +required
	Prune bool `json:"prune"`

	// DeletionPolicy says what happens to the applied objects when the
	// Kustomization is deleted: MirrorPrune (delete them when Prune is on),
	// Delete, WaitForTermination or Orphan.
	// +kubebuilder:validation:Enum=MirrorPrune;Delete;WaitForTermination;Orphan
	// +optional
	DeletionPolicy string `json:"deletionPolicy,omitempty"`

	// HealthChecks lists the objects whose health makes the Kustomization
	// Healthy.
	// +optional
	HealthChecks []meta.NamespacedObjectKindReference `json:"healthChecks,omitempty"`

	// HealthCheckExprs judge the health of custom resources.
	// +optional
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`

	// NamePrefix is prepended to the names of all objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +optional
	NamePrefix string `json:"namePrefix,omitempty"`

	// NameSuffix is appended to the names of all objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +optional
	NameSuffix string `json:"nameSuffix,omitempty"`

	// Patches are applied to the built objects.
	// +optional
	Patches []Patch `json:"patches,omitempty"`

	// Images override container images.
	// +optional
	Images []Image `json:"images,omitempty"`

	// ServiceAccountName is impersonated to apply.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// SourceRef names the source of the manifests.
	// +required
	SourceRef CrossNamespaceSourceReference `json:"sourceRef"`

	// Suspend stops reconciliation; deleting a suspended Kustomization
	// leaves its objects in place.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this object to reconcile: it applies, prunes and corrects nothing while one is closed. A missing gate counts
	// as closed. The namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`

	// TargetNamespace sets the namespace of all namespaced objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// Timeout of build, apply and health checking; defaults to Interval.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Force recreates objects whose immutable fields changed.
	// +kubebuilder:default:=false
	// +optional
	Force bool `json:"force,omitempty"`

	// Wait waits for every applied object to be healthy; HealthChecks are
	// then ignored.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// Components are kustomize components to include.
	// +optional
	Components []string `json:"components,omitempty"`

	// IgnoreMissingComponents tolerates components that do not exist.
	// +optional
	IgnoreMissingComponents bool `json:"ignoreMissingComponents,omitempty"`

	// BuildMetadata asks kustomize to annotate every object with where it
	// came from (originAnnotations: config.kubernetes.io/origin) and what
	// transformed it (transformerAnnotations:
	// alpha.config.kubernetes.io/transformations). Paths are relative to
	// spec.path.
	// +kubebuilder:validation:items:Enum=originAnnotations;transformerAnnotations
	// +listType=set
	// +optional
	BuildMetadata []string `json:"buildMetadata,omitempty"`

	// Ignore excludes fields from apply and drift detection.
	// +optional
	Ignore []IgnoreRule `json:"ignore,omitempty"`
}

// CrossNamespaceSourceReference names a source in any namespace.
type CrossNamespaceSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source.
	// +kubebuilder:validation:Enum=OCIRepository;GitRepository;Bucket;ExternalArtifact
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +required
	Name string `json:"name"`

	// Namespace of the source; defaults to the Kustomization's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// KustomizationStatus is the observed state of a Kustomization.
type KustomizationStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`

	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the Kustomization.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAppliedRevision is the source revision last applied successfully.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastAppliedOriginRevision is the origin revision of that artifact.
	// +optional
	LastAppliedOriginRevision string `json:"lastAppliedOriginRevision,omitempty"`

	// LastAttemptedRevision is the source revision last attempted.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// Inventory lists the applied objects.
	// +optional
	Inventory *ResourceInventory `json:"inventory,omitempty"`

	// History keeps the last reconciliations, newest first.
	// +optional
	History []Snapshot `json:"history,omitempty"`

	// Verified is what the last run that ended Ready found of the applied
	// objects, for a replica that takes the Kustomization over (or the
	// controller after a restart) to find the same without a request. A
	// Windlass extension.
	// +optional
	Verified *VerifiedApply `json:"verified,omitempty"`
}

// VerifiedApply says that the objects of the inventory, at the
// resourceVersions that Objects digests, were as the apply of the inputs
// that Inputs digests left them, and healthy when the Kustomization checks
// health. A controller with no memory of that apply that finds the same
// inputs and the same resourceVersions has nothing to build, apply or
// read. It is left out when the inputs include a Secret (decryption keys,
// substituteFrom a Secret): a digest of a short secret could be guessed.
type VerifiedApply struct {
	// Inputs digests what the objects are built from: the artifact, the
	// spec and the substitution variables.
	// +required
	Inputs string `json:"inputs"`
	// Output digests the objects built, and how they are applied.
	// +required
	Output string `json:"output"`
	// Objects digests the inventory entries with the resourceVersion each
	// object had when it was last found as applied.
	// +required
	Objects string `json:"objects"`
}

// ResourceInventory lists the objects a Kustomization applied.
type ResourceInventory struct {
	// Entries of the inventory.
	Entries []ResourceRef `json:"entries"`
}

// ResourceRef identifies one applied object.
type ResourceRef struct {
	// ID is '<namespace>_<name>_<group>_<kind>'.
	ID string `json:"id"`
	// Version is the API version of the object.
	Version string `json:"v"`
}

// Snapshot records reconciliations that had the same outcome.
type Snapshot struct {
	// Digest of the applied manifests.
	// +required
	Digest string `json:"digest"`
	// FirstReconciled is when this outcome was first seen.
	// +required
	FirstReconciled metav1.Time `json:"firstReconciled"`
	// LastReconciled is when it was last seen.
	// +required
	LastReconciled metav1.Time `json:"lastReconciled"`
	// LastReconciledDuration is how long the last reconciliation took.
	// +required
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	LastReconciledDuration metav1.Duration `json:"lastReconciledDuration"`
	// LastReconciledStatus is the Ready reason of the last reconciliation.
	// +required
	LastReconciledStatus string `json:"lastReconciledStatus"`
	// TotalReconciliations counts the reconciliations with this outcome.
	// +required
	TotalReconciliations int64 `json:"totalReconciliations"`
	// Metadata holds the source revision and other facts.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Kustomization is the Schema for the kustomizations API: a pipeline that
// builds a source's manifests and keeps a cluster equal to them.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ks,categories=all;fluxcd;fluxcd-appliers
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KustomizationSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status KustomizationStatus `json:"status,omitempty"`
}

// GetConditions returns the object's conditions.
func (in *Kustomization) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the object's conditions.
func (in *Kustomization) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// SetObservedGeneration records the generation the controller acted on.
func (in *Kustomization) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetTimeout returns the timeout of one reconciliation: spec.timeout, else
// the interval.
func (in *Kustomization) GetTimeout() time.Duration {
	if in.Spec.Timeout != nil && in.Spec.Timeout.Duration > 0 {
		return in.Spec.Timeout.Duration
	}
	return in.Spec.Interval.Duration
}

// GetRetryInterval returns the interval after a failure: spec.retryInterval,
// else the interval.
func (in *Kustomization) GetRetryInterval() time.Duration {
	if in.Spec.RetryInterval != nil && in.Spec.RetryInterval.Duration > 0 {
		return in.Spec.RetryInterval.Duration
	}
	return in.Spec.Interval.Duration
}

// GetDeletionPolicy returns the deletion policy, MirrorPrune by default.
func (in *Kustomization) GetDeletionPolicy() string {
	if in.Spec.DeletionPolicy == "" {
		return DeletionPolicyMirrorPrune
	}
	return in.Spec.DeletionPolicy
}

// +kubebuilder:object:root=true

// KustomizationList is a list of Kustomizations.
type KustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Kustomization `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Kustomization{}, &KustomizationList{})
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *Kustomization) GetObservedGeneration() int64 {
	return in.Status.ObservedGeneration
}

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *Kustomization) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
