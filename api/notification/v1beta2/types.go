package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
)

// Status is the v1beta2 status of a Provider or an Alert. Windlass never
// writes it (objects are stored as v1beta3, which has no status); it is in
// the schema so that manifests that carry one still apply.
type Status struct {
	// ObservedGeneration is the last generation a controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the object.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Provider is the v1beta2 form of a Provider: the v1beta3 spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:deprecatedversion:warning="notification.toolkit.fluxcd.io/v1beta2 Provider is deprecated, upgrade to v1beta3"
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   notificationv1beta3.ProviderSpec `json:"spec,omitempty"`
	Status Status                           `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderList is a list of v1beta2 Providers.
type ProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provider `json:"items"`
}

// Alert is the v1beta2 form of an Alert: the v1beta3 spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:deprecatedversion:warning="notification.toolkit.fluxcd.io/v1beta2 Alert is deprecated, upgrade to v1beta3"
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Severity",type=string,JSONPath=`.spec.eventSeverity`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Alert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   notificationv1beta3.AlertSpec `json:"spec,omitempty"`
	Status Status                        `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AlertList is a list of v1beta2 Alerts.
type AlertList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Alert `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Provider{}, &ProviderList{}, &Alert{}, &AlertList{})
}
