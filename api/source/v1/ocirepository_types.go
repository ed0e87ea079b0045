package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// OCIRepositoryKind is the kind name of OCIRepository.
const OCIRepositoryKind = "OCIRepository"

// Providers of OCIRepository credentials.
const (
	OCIProviderGeneric = "generic"
	OCIProviderAWS     = "aws"
	OCIProviderAzure   = "azure"
	OCIProviderGCP     = "gcp"
)

// Layer operations of an OCIRepository's layer selector.
const (
	// OCILayerExtract extracts the layer, a tar.gz, and packages its
	// files as the artifact (the default).
	OCILayerExtract = "extract"
	// OCILayerCopy stores the layer as the artifact, unchanged.
	OCILayerCopy = "copy"
)

// Verification providers.
const (
	// VerificationProviderCosign verifies Sigstore cosign signatures.
	VerificationProviderCosign = "cosign"
	// VerificationProviderNotation verifies Notary Project signatures.
	VerificationProviderNotation = "notation"
)

// OCIRepositorySpec is the desired state of an OCIRepository.
type OCIRepositorySpec struct {
	// URL of the repository in a registry: oci://host/repository.
	// +kubebuilder:validation:Pattern="^oci://.*$"
	// +required
	URL string `json:"url"`

	// Reference selects the artifact: digest, semver or tag (in that order
	// of precedence); defaults to the latest tag.
	// +optional
	Reference *OCIRepositoryRef `json:"ref,omitempty"`

	// LayerSelector selects the layer that holds the content; defaults to
	// the first layer, extracted.
	// +optional
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`

	// Provider of the registry credentials: generic (default, from
	// SecretRef or ServiceAccountName), aws, azure or gcp (cloud identity).
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson with
	// the registry credentials.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Verify checks the signature of the artifact before it is stored.
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`

	// ServiceAccountName names a service account whose imagePullSecrets
	// give the registry credentials.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef names a Secret with TLS settings: ca.crt (a CA to
	// trust), tls.crt and tls.key (a client certificate).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret with the proxy to use: address,
	// username and password.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Interval at which the repository is checked for updates. Every
	// metav1.Duration field carries the markers explained above
	// GitRepositorySpec.Interval.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of registry operations; defaults to 60s.
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

	// Insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

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

// OCIRepositoryRef selects an artifact of the repository. Precedence,
// highest first: digest, semver, tag.
type OCIRepositoryRef struct {
	// Digest of the artifact, sha256:<hex>.
	// +optional
	Digest string `json:"digest,omitempty"`

	// SemVer range of tags to pull the highest of.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// SemverFilter is a regular expression that the tags considered by
	// SemVer must match.
	// +optional
	SemverFilter string `json:"semverFilter,omitempty"`

	// Tag to pull; defaults to latest.
	// +optional
	Tag string `json:"tag,omitempty"`
}

// OCILayerSelector selects a layer of the artifact and what to do with it.
type OCILayerSelector struct {
	// MediaType of the layer; the first layer with it is selected. Empty
	// selects the first layer.
	// +optional
	MediaType string `json:"mediaType,omitempty"`

	// Operation: extract (the default) unpacks the layer, a tar.gz, and
	// packages its files; copy stores the layer unchanged.
	// +kubebuilder:validation:Enum=extract;copy
	// +optional
	Operation string `json:"operation,omitempty"`
}

// GetOperation returns the operation in force, extract by default.
func (in *OCILayerSelector) GetOperation() string {
	if in == nil || in.Operation == "" {
		return OCILayerExtract
	}
	return in.Operation
}

// OCIRepositoryVerification says how to verify the artifact's signature.
type OCIRepositoryVerification struct {
	// Provider of the signatures: cosign (notation is accepted by the
	// schema and reported as unsupported).
	// +kubebuilder:validation:Enum=cosign;notation
	// +kubebuilder:default:=cosign
	// +required
	Provider string `json:"provider"`

	// SecretRef names a Secret of cosign public keys (*.pub entries); with
	// it, signatures are verified by key.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// MatchOIDCIdentity lists the keyless signers that are trusted; one
	// must match.
	// +optional
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`

	// TrustedRootSecretRef names a Secret with trusted_root.json, the
	// Sigstore trusted root that keyless signatures are verified against.
	// +optional
	TrustedRootSecretRef *meta.LocalObjectReference `json:"trustedRootSecretRef,omitempty"`
}

// OIDCIdentityMatch is a keyless signer: regular expressions over the
// OIDC issuer and the subject of the signing certificate.
type OIDCIdentityMatch struct {
	// Issuer is a regular expression over the OIDC issuer.
	// +required
	Issuer string `json:"issuer"`

	// Subject is a regular expression over the certificate's identity.
	// +required
	Subject string `json:"subject"`
}

// OCIRepositoryStatus is the observed state of an OCIRepository.
type OCIRepositoryStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the OCIRepository.
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

	// ObservedLayerSelector is the spec.layerSelector of the last artifact.
	// +optional
	ObservedLayerSelector *OCILayerSelector `json:"observedLayerSelector,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// OCIRepository is the Schema for the ocirepositories API: an artifact in
// an OCI registry that the source controller pulls, verifies and stores.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ocirepo,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OCIRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status OCIRepositoryStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// OCIRepositoryList is a list of OCIRepositories.
type OCIRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OCIRepository{}, &OCIRepositoryList{})
}

// GetConditions returns the object's conditions.
func (in *OCIRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *OCIRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetArtifact returns the object's latest artifact, or nil.
func (in *OCIRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *OCIRepository) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// GetTimeout returns the timeout of registry operations, 60s by default.
func (in *OCIRepository) GetTimeout() time.Duration {
	if in.Spec.Timeout == nil || in.Spec.Timeout.Duration <= 0 {
		return 60 * time.Second
	}
	return in.Spec.Timeout.Duration
}

// GetLayerSelector returns the layer selector in force (never nil).
func (in *OCIRepository) GetLayerSelector() OCILayerSelector {
	s := OCILayerSelector{Operation: OCILayerExtract}
	if in.Spec.LayerSelector != nil {
		s.MediaType = in.Spec.LayerSelector.MediaType
		s.Operation = in.Spec.LayerSelector.GetOperation()
	}
	return s
}

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *OCIRepository) IsSuspended() bool { return in.Spec.Suspend }

// GetGates returns the gates the object waits behind (spec.gates).
func (in *OCIRepository) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// SetObservedGeneration records the generation the controller acted on.
func (in *OCIRepository) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *OCIRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *OCIRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
