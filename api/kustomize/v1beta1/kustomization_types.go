package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// KustomizationSpec is the v1beta1 desired state of a Kustomization.
type KustomizationSpec struct {
	// DependsOn lists the Kustomizations that must be ready first.
	// +optional
	DependsOn []meta.DependencyReference `json:"dependsOn,omitempty"`

	// Decryption decrypts SOPS-encrypted secrets.
	// +optional
	Decryption *kustomizev1.Decryption `json:"decryption,omitempty"`

	// Duration fields: every one carries the same XValidation marker (spec
	// fields also the Pattern), so that no value that overflows a Go
	// time.Duration is stored; why this suffices is told above
	// GitRepositorySpec.Interval in api/source/v1/gitrepository_types.go.

	// Interval at which the source is re-applied.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// RetryInterval is the interval after a failure.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`

	// KubeConfig reaches a remote cluster to apply to.
	// +optional
	KubeConfig *meta.KubeConfigReference `json:"kubeConfig,omitempty"`

	// Path to the folder of the kustomization in the source.
	// +optional
	Path string `json:"path,omitempty"`

	// PostBuild substitutes variables after the build.
	// +optional
	PostBuild *kustomizev1.PostBuild `json:"postBuild,omitempty"`

	// Prune deletes the objects that left the source.
	// +optional
	Prune bool `json:"prune,omitempty"`

	// HealthChecks lists the objects whose health makes the Kustomization
	// ready.
	// +optional
	HealthChecks []meta.NamespacedObjectKindReference `json:"healthChecks,omitempty"`

	// Patches are applied to the built objects.
	// +optional
	Patches []kustomizev1.Patch `json:"patches,omitempty"`

	// PatchesStrategicMerge is accepted for compatibility and ignored.
	// +optional
	PatchesStrategicMerge []apiextensionsv1.JSON `json:"patchesStrategicMerge,omitempty"`

	// PatchesJSON6902 is accepted for compatibility and ignored.
	// +optional
	PatchesJSON6902 []apiextensionsv1.JSON `json:"patchesJson6902,omitempty"`

	// Images override container images.
	// +optional
	Images []kustomizev1.Image `json:"images,omitempty"`

	// ServiceAccountName is impersonated to apply.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// SourceRef names the source of the manifests.
	// +required
	SourceRef kustomizev1.CrossNamespaceSourceReference `json:"sourceRef"`

	// Suspend stops reconciliation.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this object to reconcile: it applies, prunes and corrects nothing while one is closed. A missing gate counts
	// as closed. The namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`

	// TargetNamespace sets the namespace of all namespaced objects.
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// Timeout of build, apply and health checking.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Validation is accepted for compatibility and ignored: every apply is
	// validated by a server-side dry run.
	// +kubebuilder:validation:Enum=none;client;server
	// +optional
	Validation string `json:"validation,omitempty"`

	// Force recreates objects whose immutable fields changed.
	// +optional
	Force bool `json:"force,omitempty"`
}

// Kustomization is the v1beta1 form of a Kustomization.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ks,categories=all;fluxcd;fluxcd-appliers
// +kubebuilder:deprecatedversion:warning="kustomize.toolkit.fluxcd.io/v1beta1 Kustomization is deprecated, upgrade to v1"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KustomizationSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status kustomizev1.KustomizationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// KustomizationList is a list of v1beta1 Kustomizations.
type KustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Kustomization `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Kustomization{}, &KustomizationList{})
}
