package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// GitRepositoryKind is the kind name of GitRepository.
const GitRepositoryKind = "GitRepository"

// Git providers that GitRepository accepts.
const (
	GitProviderGeneric = "generic"
	GitProviderAzure   = "azure"
	GitProviderGitHub  = "github"
	GitProviderAWS     = "aws"
)

// GitVerificationMode says which Git objects a GitRepository verifies the
// signature of.
// +kubebuilder:validation:Enum=head;HEAD;Tag;TagAndHEAD
type GitVerificationMode string

const (
	// ModeGitHEAD verifies the commit that HEAD points to.
	ModeGitHEAD GitVerificationMode = "HEAD"
	// ModeGitTag verifies the tag that the reference names.
	ModeGitTag GitVerificationMode = "Tag"
	// ModeGitTagAndHEAD verifies the tag and the commit it points to.
	ModeGitTagAndHEAD GitVerificationMode = "TagAndHEAD"
)

// Valid reports whether the mode is one of the known modes.
func (m GitVerificationMode) Valid() bool {
	switch m {
	case ModeGitHEAD, "head", ModeGitTag, ModeGitTagAndHEAD:
		return true
	}
	return false
}

// Normalize returns the canonical spelling of the mode ("head" is HEAD; an
// empty mode is HEAD).
func (m GitVerificationMode) Normalize() GitVerificationMode {
	if m == "" || m == "head" {
		return ModeGitHEAD
	}
	return m
}

// VerifiesHEAD reports whether the mode verifies the HEAD commit.
func (m GitVerificationMode) VerifiesHEAD() bool {
	n := m.Normalize()
	return n == ModeGitHEAD || n == ModeGitTagAndHEAD
}

// VerifiesTag reports whether the mode verifies the tag.
func (m GitVerificationMode) VerifiesTag() bool {
	n := m.Normalize()
	return n == ModeGitTag || n == ModeGitTagAndHEAD
}

// GitRepositorySpec is the desired state of a GitRepository.
// +kubebuilder:validation:XValidation:rule="!has(self.serviceAccountName) || (has(self.provider) && (self.provider == 'azure' || self.provider == 'aws'))",message="serviceAccountName can only be set with the azure or aws provider"
type GitRepositorySpec struct {
	// URL of the Git repository: http, https or ssh.
	// +kubebuilder:validation:Pattern="^(http|https|ssh)://.*$"
	// +required
	URL string `json:"url"`

	// SecretRef names a Secret in the same namespace with the credentials:
	// username and password or bearerToken (HTTPS), ca.crt, tls.crt and
	// tls.key (TLS), identity, identity.pub and known_hosts (SSH).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Provider of the credentials: generic (default, from SecretRef), azure,
	// github or aws.
	// +kubebuilder:validation:Enum=generic;azure;github;aws
	// +optional
	Provider string `json:"provider,omitempty"`

	// ServiceAccountName is the service account whose identity the provider
	// uses (azure and aws only).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Every metav1.Duration field of the Windlass APIs carries the same
	// XValidation marker (spec fields also the Pattern); keep them identical.
	// The pattern alone (no sign, no ns or µs, no bare "0") lets through
	// values such as 9999999999h, 2562048h or 2562047h2562047h that overflow
	// the int64 nanoseconds of a time.Duration: the API server would store
	// them, metav1.Duration.UnmarshalJSON would then fail on them, and with it
	// the decoding of every list of the kind, so that the informer stops
	// every object of the kind (CVE-2022-39272 class). A pattern cannot
	// bound a sum of parts, and a maxLength that rules out overflow (7
	// characters: 999999h) would refuse valid values such as 1h30m15s or
	// 2562047h. So the rule converts the string with CEL's duration(), which
	// cel-go (common/types/string.go) implements with Go's own
	// time.ParseDuration and no other bound: a string that Go cannot parse
	// makes the rule fail with a conversion error, which the API server
	// reports as an invalid value of the field.
	// The API server thus accepts exactly the strings that the pattern allows
	// and that time.ParseDuration, the controller's decoder, parses; the
	// comparison only spells out the bound and is true whenever the
	// conversion succeeds. The rule's cost does not grow with the string, so
	// it needs no maxLength. Status durations have no pattern, since
	// time.Duration.String writes short ones in ns or µs. "0s" stays valid,
	// as in the reference API: zero cannot overflow, and it turns periodic
	// reconciliation off rather than on in a loop.

	// Interval at which the repository is checked for updates.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of Git operations such as cloning; defaults to 60s.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Reference to check out; defaults to the master branch.
	// +optional
	Reference *GitRepositoryRef `json:"ref,omitempty"`

	// Verification of commit and tag signatures.
	// +optional
	Verification *GitRepositoryVerification `json:"verify,omitempty"`

	// ProxySecretRef names a Secret with the proxy to use: address, username
	// and password.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

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

	// RecurseSubmodules clones the repository's submodules too.
	// +optional
	RecurseSubmodules bool `json:"recurseSubmodules,omitempty"`

	// Include copies the artifacts of other GitRepositories into this one's.
	// +optional
	Include []GitRepositoryInclude `json:"include,omitempty"`

	// SparseCheckout lists the directories to check out; empty means all.
	// +optional
	SparseCheckout []string `json:"sparseCheckout,omitempty"`
}

// GitRepositoryInclude copies a path of another GitRepository's artifact into
// this one's.
type GitRepositoryInclude struct {
	// GitRepositoryRef names the GitRepository to include, in the same
	// namespace.
	// +required
	GitRepositoryRef meta.LocalObjectReference `json:"repository"`

	// FromPath is the path in the included artifact to copy; defaults to its
	// root.
	// +optional
	FromPath string `json:"fromPath,omitempty"`

	// ToPath is where the included content lands in this artifact; defaults to
	// the name of the included GitRepository.
	// +optional
	ToPath string `json:"toPath,omitempty"`
}

// GetFromPath returns the path to copy from.
func (in *GitRepositoryInclude) GetFromPath() string {
	return in.FromPath
}

// GetToPath returns the path to copy to.
func (in *GitRepositoryInclude) GetToPath() string {
	if in.ToPath == "" {
		return in.GitRepositoryRef.Name
	}
	return in.ToPath
}

// GitRepositoryRef selects what to check out. Precedence, highest first:
// commit, name, semver, tag, branch.
type GitRepositoryRef struct {
	// Branch to check out; defaults to master when nothing else is given.
	// +optional
	Branch string `json:"branch,omitempty"`

	// Tag to check out; takes precedence over Branch.
	// +optional
	Tag string `json:"tag,omitempty"`

	// SemVer range of tags to check out the highest of; takes precedence over
	// Tag.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// Name is a full reference name such as refs/pull/420/head; takes
	// precedence over Branch, Tag and SemVer.
	// +optional
	Name string `json:"name,omitempty"`

	// Commit SHA to check out; takes precedence over everything else. With
	// Branch, the clone is shallow and the commit must be on that branch.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// GitRepositoryVerification says how to verify the authenticity of the
// repository's commits and tags.
type GitRepositoryVerification struct {
	// Mode: HEAD verifies the commit checked out, Tag the tag, TagAndHEAD
	// both. Defaults to HEAD.
	// +kubebuilder:default=HEAD
	// +optional
	Mode GitVerificationMode `json:"mode,omitempty"`

	// SecretRef names a Secret of trusted public keys: PGP keys in *.asc
	// entries and SSH keys in *.sshpub entries.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// GitRepositoryStatus is the observed state of a GitRepository.
type GitRepositoryStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the GitRepository.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Artifact is the output of the last successful reconciliation.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// IncludedArtifacts are the artifacts included by the last successful
	// reconciliation, in the order of spec.include.
	// +optional
	IncludedArtifacts []*meta.Artifact `json:"includedArtifacts,omitempty"`

	// ObservedIgnore is the spec.ignore of the last artifact.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	// ObservedRecurseSubmodules is the spec.recurseSubmodules of the last
	// artifact.
	// +optional
	ObservedRecurseSubmodules bool `json:"observedRecurseSubmodules,omitempty"`

	// ObservedInclude is the spec.include of the last artifact.
	// +optional
	ObservedInclude []GitRepositoryInclude `json:"observedInclude,omitempty"`

	// ObservedSparseCheckout is the spec.sparseCheckout of the last artifact.
	// +optional
	ObservedSparseCheckout []string `json:"observedSparseCheckout,omitempty"`

	// SourceVerificationMode is the verification mode of the last artifact.
	// +optional
	SourceVerificationMode *GitVerificationMode `json:"sourceVerificationMode,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// GitRepository is the Schema for the gitrepositories API: a Git repository
// that the source controller fetches, verifies and packages as an artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitrepo;gitrepos,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GitRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status GitRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the object's conditions.
func (in *GitRepository) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the object's conditions.
func (in *GitRepository) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetArtifact returns the object's latest artifact, or nil.
func (in *GitRepository) GetArtifact() *meta.Artifact {
	return in.Status.Artifact
}

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *GitRepository) GetRequeueAfter() time.Duration {
	return in.Spec.Interval.Duration
}

// GetTimeout returns the timeout of Git operations, 60s by default.
func (in *GitRepository) GetTimeout() time.Duration {
	if in.Spec.Timeout == nil || in.Spec.Timeout.Duration <= 0 {
		return 60 * time.Second
	}
	return in.Spec.Timeout.Duration
}

// GetVerificationMode returns the verification mode in force, if any.
func (in *GitRepository) GetVerificationMode() *GitVerificationMode {
	if in.Spec.Verification == nil {
		return nil
	}
	m := in.Spec.Verification.Mode.Normalize()
	return &m
}

// +kubebuilder:object:root=true

// GitRepositoryList is a list of GitRepositories.
type GitRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitRepository{}, &GitRepositoryList{})
}

// SetObservedGeneration records the generation the controller acted on.
func (in *GitRepository) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *GitRepository) GetObservedGeneration() int64 {
	return in.Status.ObservedGeneration
}

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *GitRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
