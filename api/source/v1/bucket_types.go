package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// BucketKind is the kind name of Bucket.
const BucketKind = "Bucket"

// Providers of Bucket storage.
const (
	// BucketProviderGeneric is any server of the S3 API.
	BucketProviderGeneric = "generic"
	BucketProviderAWS     = "aws"
	BucketProviderGoogle  = "gcp"
	BucketProviderAzure   = "azure"
)

// BucketSpec is the desired state of a Bucket.
type BucketSpec struct {
	// Provider of the object storage: generic (any S3 API, the default),
	// aws, gcp or azure.
	// +kubebuilder:validation:Enum=generic;aws;gcp;azure
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`

	// BucketName is the name of the bucket.
	// +required
	BucketName string `json:"bucketName"`

	// Endpoint is the host (and port) of the object storage, without a
	// scheme.
	// +required
	Endpoint string `json:"endpoint"`

	// Region of the bucket.
	// +optional
	Region string `json:"region,omitempty"`

	// Prefix selects the objects whose keys start with it (a server-side
	// filter).
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// Insecure allows plain HTTP to the endpoint.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// SecretRef names a Secret with the credentials: accesskey and
	// secretkey.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret with TLS settings: ca.crt (a CA to
	// trust), tls.crt and tls.key (a client certificate).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret with the proxy to use: address,
	// username and password.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Interval at which the bucket is checked for updates. Every
	// metav1.Duration field carries the markers explained above
	// GitRepositorySpec.Interval.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of object storage operations; defaults to 60s.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Ignore overrides the default exclusions with rules in .gitignore
	// format.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend tells the controller to stop reconciling this object.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this object to reconcile: it fetches no new revision while one is
	// closed (it keeps serving its last artifact). A missing gate counts as
	// closed. The namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// BucketStatus is the observed state of a Bucket.
type BucketStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the Bucket.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the download address of the last artifact.
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the output of the last successful reconciliation.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// ObservedIgnore is the spec.ignore of the last artifact.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Bucket is the Schema for the buckets API: objects of an S3-compatible
// bucket that the source controller downloads and stores as an artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-sources
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type Bucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BucketSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status BucketStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BucketList is a list of Buckets.
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bucket `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Bucket{}, &BucketList{})
}

// GetConditions returns the object's conditions.
func (in *Bucket) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *Bucket) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetArtifact returns the object's latest artifact, or nil.
func (in *Bucket) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *Bucket) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// GetTimeout returns the timeout of object storage operations, 60s by
// default.
func (in *Bucket) GetTimeout() time.Duration {
	if in.Spec.Timeout == nil || in.Spec.Timeout.Duration <= 0 {
		return 60 * time.Second
	}
	return in.Spec.Timeout.Duration
}

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *Bucket) IsSuspended() bool { return in.Spec.Suspend }

// GetGates returns the gates the object waits behind (spec.gates).
func (in *Bucket) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// SetObservedGeneration records the generation the controller acted on.
func (in *Bucket) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *Bucket) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *Bucket) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
