package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
)

// ImageRepository is the v1beta2 form of an ImageRepository.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=imgrepo;imagerepo,categories=all;fluxcd;fluxcd-images
// +kubebuilder:deprecatedversion:warning="image.toolkit.fluxcd.io/v1beta2 ImageRepository is deprecated, upgrade to v1"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ImageRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec imagev1.ImageRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status imagev1.ImageRepositoryStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ImageRepositoryList is a list of v1beta2 ImageRepositories.
type ImageRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageRepository `json:"items"`
}

// ImagePolicy is the v1beta2 form of an ImagePolicy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=imgpol;imagepol,categories=all;fluxcd;fluxcd-images
// +kubebuilder:deprecatedversion:warning="image.toolkit.fluxcd.io/v1beta2 ImagePolicy is deprecated, upgrade to v1"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ImagePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec imagev1.ImagePolicySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status imagev1.ImagePolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ImagePolicyList is a list of v1beta2 ImagePolicies.
type ImagePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePolicy `json:"items"`
}

// ImageUpdateAutomation is the v1beta2 form of an ImageUpdateAutomation.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=iua;imgupd;imgauto,categories=all;fluxcd;fluxcd-images
// +kubebuilder:deprecatedversion:warning="image.toolkit.fluxcd.io/v1beta2 ImageUpdateAutomation is deprecated, upgrade to v1"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ImageUpdateAutomation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec imagev1.ImageUpdateAutomationSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status imagev1.ImageUpdateAutomationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ImageUpdateAutomationList is a list of v1beta2 ImageUpdateAutomations.
type ImageUpdateAutomationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageUpdateAutomation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ImageRepository{}, &ImageRepositoryList{},
		&ImagePolicy{}, &ImagePolicyList{}, &ImageUpdateAutomation{}, &ImageUpdateAutomationList{})
}
