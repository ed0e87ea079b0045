package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// GitRepositorySpec is the v1beta1 desired state of a GitRepository.
type GitRepositorySpec struct {
	// URL of the Git repository: http, https or ssh.
	// +kubebuilder:validation:Pattern="^(http|https|ssh)://.*$"
	// +required
	URL string `json:"url"`

	// SecretRef names a Secret in the same namespace with the credentials.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Duration fields: every one carries the same XValidation marker (spec
	// fields also the Pattern), so that no value that overflows a Go
	// time.Duration is stored; why this suffices is told above
	// GitRepositorySpec.Interval in api/source/v1/gitrepository_types.go.

	// Interval at which the repository is checked for updates.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of Git operations; defaults to 60s.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Reference to check out; defaults to the master branch.
	// +optional
	Reference *sourcev1.GitRepositoryRef `json:"ref,omitempty"`

	// Verification of commit signatures.
	// +optional
	Verification *sourcev1.GitRepositoryVerification `json:"verify,omitempty"`

	// Ignore overrides the default exclusions with rules in .gitignore
	// format.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend tells the controller to stop reconciling this object.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this object to reconcile: it fetches no new revision while one is closed (it keeps serving its last artifact). A missing gate counts
	// as closed. The namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`

	// GitImplementation is accepted for compatibility and ignored.
	// +kubebuilder:validation:Enum=go-git;libgit2
	// +optional
	GitImplementation string `json:"gitImplementation,omitempty"`

	// RecurseSubmodules clones the repository's submodules too.
	// +optional
	RecurseSubmodules bool `json:"recurseSubmodules,omitempty"`

	// Include copies the artifacts of other GitRepositories into this one's.
	// +optional
	Include []sourcev1.GitRepositoryInclude `json:"include,omitempty"`

	// AccessFrom is accepted for compatibility and ignored.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	AccessFrom *apiextensionsv1.JSON `json:"accessFrom,omitempty"`
}

// GitRepository is the v1beta1 form of a GitRepository.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitrepo;gitrepos,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:deprecatedversion:warning="source.toolkit.fluxcd.io/v1beta1 GitRepository is deprecated, upgrade to v1"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GitRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status sourcev1.GitRepositoryStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GitRepositoryList is a list of v1beta1 GitRepositories.
type GitRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitRepository{}, &GitRepositoryList{})
}
