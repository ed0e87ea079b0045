package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// ImageRepositoryKind is the kind name of ImageRepository.
const ImageRepositoryKind = "ImageRepository"

// DefaultExclusionList is spec.exclusionList when it is not set: cosign
// signatures are stored as tags ending in .sig, and are not images.
var DefaultExclusionList = []string{`^.*\.sig$`}

// Registry credential providers that ImageRepository accepts.
const (
	ProviderGeneric = "generic"
	ProviderAWS     = "aws"
	ProviderAzure   = "azure"
	ProviderGCP     = "gcp"
)

// ImageRepositorySpec is the desired state of an ImageRepository.
// Duration fields carry the XValidation marker of every Windlass duration
// (see GitRepositorySpec.Interval in api/source/v1/gitrepository_types.go).
type ImageRepositorySpec struct {
	// Image is the repository to scan, such as ghcr.io/org/app (no tag, no
	// digest).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Image string `json:"image"`

	// Interval at which the repository is scanned.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of a scan; defaults to the interval (at most 5m when the
	// interval is longer).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson in the
	// same namespace with the registry's credentials.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// ServiceAccountName names a service account in the same namespace
	// whose imagePullSecrets are used as credentials too.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef names a Secret with TLS settings: ca.crt, and tls.crt
	// with tls.key for client authentication.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret with the proxy to use: address,
	// username and password.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Suspend tells the controller to stop scanning.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// AccessFrom lists the namespaces whose ImagePolicies may use this
	// repository; policies in the repository's own namespace always may.
	// +optional
	AccessFrom *sourcev1.AccessFrom `json:"accessFrom,omitempty"`

	// ExclusionList holds regular expressions of tags to leave out of the
	// scan; defaults to ^.*\.sig$ (cosign signatures).
	// +kubebuilder:default:={"^.*\\.sig$"}
	// +kubebuilder:validation:MaxItems=25
	// +optional
	ExclusionList []string `json:"exclusionList,omitempty"`

	// Provider of the credentials: generic (from SecretRef and the service
	// account), aws, azure or gcp. Windlass serves generic.
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +kubebuilder:default=generic
	// +optional
	Provider string `json:"provider,omitempty"`

	// Insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for the repository to be scanned: while one is closed, the tags of the
	// last scan stay as they are. A missing gate counts as closed. The
	// namespace defaults to the repository's. A Windlass extension.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// ScanResult is the outcome of the last successful scan.
type ScanResult struct {
	// Revision identifies the list of tags: a digest of it, which changes
	// exactly when the list does.
	// +optional
	Revision string `json:"revision,omitempty"`

	// TagCount is the number of tags kept (after the exclusions).
	// +required
	TagCount int `json:"tagCount"`

	// ScanTime is when the scan ended.
	// +optional
	ScanTime metav1.Time `json:"scanTime,omitempty"`

	// LatestTags are up to ten tags, the greatest in reverse alphabetical
	// order.
	// +optional
	LatestTags []string `json:"latestTags,omitempty"`
}

// ImageRepositoryStatus is the observed state of an ImageRepository.
type ImageRepositoryStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the ImageRepository.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CanonicalImageName is the image with the registry spelled out, such
	// as index.docker.io/library/nginx.
	// +optional
	CanonicalImageName string `json:"canonicalImageName,omitempty"`

	// LastScanResult is the outcome of the last successful scan.
	// +optional
	LastScanResult *ScanResult `json:"lastScanResult,omitempty"`

	// ObservedExclusionList is the exclusion list of the last scan.
	// +optional
	ObservedExclusionList []string `json:"observedExclusionList,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ImageRepository scans a container image repository for its tags. The tags
// are kept by the controller, not in the cluster's database, and served
// over HTTP (/images/<namespace>/<name>/tags).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=imgrepo;imagerepo,categories=all;fluxcd;fluxcd-images
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Tags",type=integer,JSONPath=`.status.lastScanResult.tagCount`
// +kubebuilder:printcolumn:name="Last scan",type=string,JSONPath=`.status.lastScanResult.scanTime`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ImageRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ImageRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ImageRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the object's conditions.
func (in *ImageRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *ImageRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns the last generation the controller acted on.
func (in *ImageRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration records the generation the controller acted on.
func (in *ImageRepository) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// SetLastHandledReconcileRequest records the reconcile request handled.
func (in *ImageRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended reports whether spec.suspend is set.
func (in *ImageRepository) IsSuspended() bool { return in.Spec.Suspend }

// GetRequeueAfter returns spec.interval.
func (in *ImageRepository) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// GetGates returns spec.gates.
func (in *ImageRepository) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// MaxDefaultTimeout bounds the default timeout of a scan.
const MaxDefaultTimeout = 5 * time.Minute

// GetTimeout returns spec.timeout, or the interval (at most
// MaxDefaultTimeout) when it is not set.
func (in *ImageRepository) GetTimeout() time.Duration {
	if in.Spec.Timeout != nil && in.Spec.Timeout.Duration > 0 {
		return in.Spec.Timeout.Duration
	}
	d := in.Spec.Interval.Duration
	if d <= 0 || d > MaxDefaultTimeout {
		return MaxDefaultTimeout
	}
	return d
}

// GetExclusionList returns spec.exclusionList, or DefaultExclusionList when
// it is not set.
func (in *ImageRepository) GetExclusionList() []string {
	if in.Spec.ExclusionList == nil {
		return DefaultExclusionList
	}
	return in.Spec.ExclusionList
}

// ImageRepositoryList is a list of ImageRepositories.
//
// +kubebuilder:object:root=true
type ImageRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ImageRepository{}, &ImageRepositoryList{})
}
