package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// ImagePolicyKind is the kind name of ImagePolicy.
const ImagePolicyKind = "ImagePolicy"

// ReflectionPolicy says when a policy looks up the digest of the tag it
// elects.
// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
type ReflectionPolicy string

const (
	// ReflectNever never looks the digest up; latestRef.digest stays empty.
	ReflectNever ReflectionPolicy = "Never"
	// ReflectIfNotPresent looks the digest up when the elected tag changes.
	ReflectIfNotPresent ReflectionPolicy = "IfNotPresent"
	// ReflectAlways looks the digest up at every spec.interval, so that a
	// tag pushed again (latest, a moving tag) is noticed.
	ReflectAlways ReflectionPolicy = "Always"
)

// DefaultDigestInterval is how often the digest is looked up under
// ReflectAlways when spec.interval is not set.
const DefaultDigestInterval = 10 * time.Minute

// Orders of the alphabetical and numerical policies.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// ImagePolicySpec is the desired state of an ImagePolicy.
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || (has(self.digestReflectionPolicy) && self.digestReflectionPolicy == 'Always')",message="spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'"
type ImagePolicySpec struct {
	// ImageRepositoryRef names the ImageRepository whose tags the policy
	// chooses from; the namespace defaults to the policy's.
	// +required
	ImageRepositoryRef meta.NamespacedObjectReference `json:"imageRepositoryRef"`

	// Policy is the rule that elects the latest tag.
	// +required
	Policy ImagePolicyChoice `json:"policy"`

	// FilterTags keeps only the tags that match a pattern, and may order
	// them by a part of the tag.
	// +optional
	FilterTags *TagFilter `json:"filterTags,omitempty"`

	// DigestReflectionPolicy says when the digest of the elected tag is
	// looked up: Never (the default), IfNotPresent or Always.
	// +kubebuilder:default=Never
	// +optional
	DigestReflectionPolicy ReflectionPolicy `json:"digestReflectionPolicy,omitempty"`

	// Interval at which the digest is looked up again under
	// digestReflectionPolicy Always; defaults to 10m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Suspend tells the controller to keep the elected tag as it is. A
	// Windlass extension.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for the policy to elect a new image: while one is closed, it keeps
	// the image it elected (a freeze). A missing gate counts as closed. The
	// namespace defaults to the policy's. A Windlass extension.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// ImagePolicyChoice is one rule: exactly one field is set.
// +kubebuilder:validation:XValidation:rule="(has(self.semver) ? 1 : 0) + (has(self.alphabetical) ? 1 : 0) + (has(self.numerical) ? 1 : 0) == 1",message="exactly one of semver, alphabetical and numerical must be set"
type ImagePolicyChoice struct {
	// SemVer elects the highest version in a range.
	// +optional
	SemVer *SemVerPolicy `json:"semver,omitempty"`

	// Alphabetical elects by the alphabetical order of the tags.
	// +optional
	Alphabetical *AlphabeticalPolicy `json:"alphabetical,omitempty"`

	// Numerical elects by the numerical order of the tags.
	// +optional
	Numerical *NumericalPolicy `json:"numerical,omitempty"`
}

// SemVerPolicy elects the highest semantic version that satisfies a range.
type SemVerPolicy struct {
	// Range of versions, such as ">=1.0.0 <2.0.0" or "^1.x".
	// +kubebuilder:validation:MinLength=1
	// +required
	Range string `json:"range"`
}

// AlphabeticalPolicy elects the last tag in the given order: asc elects
// the greatest tag, desc the smallest.
type AlphabeticalPolicy struct {
	// Order: asc (the default) or desc.
	// +kubebuilder:default=asc
	// +kubebuilder:validation:Enum=asc;desc
	// +optional
	Order string `json:"order,omitempty"`
}

// NumericalPolicy elects the last tag in numerical order: asc elects the
// greatest number, desc the smallest. Tags that are not numbers are left
// out.
type NumericalPolicy struct {
	// Order: asc (the default) or desc.
	// +kubebuilder:default=asc
	// +kubebuilder:validation:Enum=asc;desc
	// +optional
	Order string `json:"order,omitempty"`
}

// TagFilter keeps the tags that match Pattern, and orders them by Extract.
type TagFilter struct {
	// Pattern is a regular expression (RE2) that a tag must match.
	// +optional
	Pattern string `json:"pattern,omitempty"`

	// Extract is the value the policy orders by, written with the
	// pattern's groups, such as $ts or ${1}; defaults to the whole tag.
	// +optional
	Extract string `json:"extract,omitempty"`
}

// ImagePolicyStatus is the observed state of an ImagePolicy.
type ImagePolicyStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the ImagePolicy.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LatestRef is the image the policy elects.
	// +optional
	LatestRef *ImageRef `json:"latestRef,omitempty"`

	// ObservedPreviousRef is the image the policy elected before LatestRef.
	// +optional
	ObservedPreviousRef *ImageRef `json:"observedPreviousRef,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ImagePolicy elects the latest image of an ImageRepository by a rule.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=imgpol;imagepol,categories=all;fluxcd;fluxcd-images
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.latestRef.name`
// +kubebuilder:printcolumn:name="Tag",type=string,JSONPath=`.status.latestRef.tag`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ImagePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ImagePolicySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ImagePolicyStatus `json:"status,omitempty"`
}

// GetConditions returns the object's conditions.
func (in *ImagePolicy) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *ImagePolicy) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns the last generation the controller acted on.
func (in *ImagePolicy) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration records the generation the controller acted on.
func (in *ImagePolicy) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// SetLastHandledReconcileRequest records the reconcile request handled.
func (in *ImagePolicy) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended reports whether spec.suspend is set.
func (in *ImagePolicy) IsSuspended() bool { return in.Spec.Suspend }

// GetRequeueAfter returns how often the policy is evaluated without a
// change of its repository: the digest interval under ReflectAlways, and
// otherwise never (a policy is evaluated again when its repository's
// tags change).
func (in *ImagePolicy) GetRequeueAfter() time.Duration {
	if in.GetDigestReflectionPolicy() != ReflectAlways {
		return 0
	}
	if in.Spec.Interval != nil && in.Spec.Interval.Duration > 0 {
		return in.Spec.Interval.Duration
	}
	return DefaultDigestInterval
}

// GetGates returns spec.gates.
func (in *ImagePolicy) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// GetDigestReflectionPolicy returns spec.digestReflectionPolicy, Never by
// default.
func (in *ImagePolicy) GetDigestReflectionPolicy() ReflectionPolicy {
	if in.Spec.DigestReflectionPolicy == "" {
		return ReflectNever
	}
	return in.Spec.DigestReflectionPolicy
}

// GetRepositoryNamespace returns the namespace of the ImageRepository.
func (in *ImagePolicy) GetRepositoryNamespace() string {
	if in.Spec.ImageRepositoryRef.Namespace == "" {
		return in.Namespace
	}
	return in.Spec.ImageRepositoryRef.Namespace
}

// ImagePolicyList is a list of ImagePolicies.
//
// +kubebuilder:object:root=true
type ImagePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ImagePolicy{}, &ImagePolicyList{})
}

// PinAnnotation, on an ImagePolicy, pins it to one tag of its repository
// until the annotation is removed: the policy elects that tag whatever its
// rule says, and the automations that use the policy commit it (an
// impromptu update, `windlass image set`). A Windlass extension.
const PinAnnotation = "windlass.dev/pinned-tag"
