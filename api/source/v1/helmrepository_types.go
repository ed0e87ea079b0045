package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// HelmRepositoryKind is the kind name of HelmRepository.
const HelmRepositoryKind = "HelmRepository"

// Types of HelmRepository.
const (
	// HelmRepositoryTypeDefault is a chart repository served over HTTP(S):
	// an index.yaml and chart packages.
	HelmRepositoryTypeDefault = "default"
	// HelmRepositoryTypeOCI is an OCI registry that holds charts; it has no
	// index and produces no artifact.
	HelmRepositoryTypeOCI = "oci"
)

// HelmRepositorySpec is the desired state of a HelmRepository.
type HelmRepositorySpec struct {
	// URL of the repository: http(s):// for type default, oci:// for type
	// oci.
	// +kubebuilder:validation:Pattern="^(http|https|oci)://.*$"
	// +required
	URL string `json:"url"`

	// SecretRef names a Secret with the credentials: username and password
	// (basic auth); the TLS keys of CertSecretRef are also read from it (a
	// deprecated form).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret with TLS settings: ca.crt (a CA to
	// trust), tls.crt and tls.key (a client certificate).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// PassCredentials sends the credentials to every host the repository
	// points at (charts on another host, redirects). Off by default: the
	// credentials go to the repository's own host only.
	// +optional
	PassCredentials bool `json:"passCredentials,omitempty"`

	// Interval at which the index is fetched again.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`

	// Insecure allows plain HTTP to an OCI registry (type oci only).
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Timeout of the index download or an OCI pull; defaults to 60s.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend tells the controller to stop reconciling this object.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// AccessFrom is accepted for compatibility and not acted on.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	AccessFrom *AccessFrom `json:"accessFrom,omitempty"`

	// Type of the repository: default (HTTP index) or oci.
	// +kubebuilder:validation:Enum=default;oci
	// +optional
	Type string `json:"type,omitempty"`

	// Provider of OCI registry credentials: generic (default), aws, azure
	// or gcp.
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this object to reconcile: it fetches no new index while one is
	// closed (it keeps serving its last artifact). A missing gate counts as
	// closed. The namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// AccessFrom is the provisional cross-namespace access list of the
// reference API; Windlass keeps it and does not act on it.
type AccessFrom struct {
	// NamespaceSelectors select the namespaces given access.
	// +optional
	NamespaceSelectors []NamespaceSelector `json:"namespaceSelectors,omitempty"`
}

// NamespaceSelector selects namespaces by label.
type NamespaceSelector struct {
	// MatchLabels are the labels a namespace must have.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// HelmRepositoryStatus is the observed state of a HelmRepository.
type HelmRepositoryStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the HelmRepository.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the download address of the last index artifact.
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the normalised index of the last successful fetch.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmRepository is the Schema for the helmrepositories API: a Helm chart
// repository, an HTTP index or an OCI registry.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=helmrepo,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HelmRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status HelmRepositoryStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HelmRepositoryList is a list of HelmRepositories.
type HelmRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HelmRepository{}, &HelmRepositoryList{})
}

// GetConditions returns the object's conditions.
func (in *HelmRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *HelmRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetArtifact returns the object's latest artifact, or nil.
func (in *HelmRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetType returns the repository type, default unless oci.
func (in *HelmRepository) GetType() string {
	if in.Spec.Type == "" {
		return HelmRepositoryTypeDefault
	}
	return in.Spec.Type
}

// DefaultHelmRepositoryInterval is the interval of a HelmRepository whose
// spec leaves it out.
const DefaultHelmRepositoryInterval = 10 * time.Minute

// GetRequeueAfter returns the interval at which to reconcile the object,
// 10m when the spec leaves it out.
func (in *HelmRepository) GetRequeueAfter() time.Duration {
	if in.Spec.Interval.Duration <= 0 {
		return DefaultHelmRepositoryInterval
	}
	return in.Spec.Interval.Duration
}

// GetTimeout returns the timeout of the index fetch, 60s by default.
func (in *HelmRepository) GetTimeout() time.Duration {
	if in.Spec.Timeout == nil || in.Spec.Timeout.Duration <= 0 {
		return 60 * time.Second
	}
	return in.Spec.Timeout.Duration
}

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *HelmRepository) IsSuspended() bool { return in.Spec.Suspend }

// GetGates returns the gates the object waits behind (spec.gates).
func (in *HelmRepository) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// SetObservedGeneration records the generation the controller acted on.
func (in *HelmRepository) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *HelmRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *HelmRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
