// Package v1 holds the image.toolkit.fluxcd.io/v1 API: ImageRepository,
// which scans a container image repository for its tags; ImagePolicy, which
// elects the latest of those tags by a rule (semver, alphabetical or
// numerical order, after a filter); and ImageUpdateAutomation, which
// rewrites the image fields marked in a Git repository to the images the
// policies elect, then commits and pushes.
//
// +kubebuilder:object:generate=true
// +groupName=image.toolkit.fluxcd.io
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "image.toolkit.fluxcd.io", Version: "v1"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Condition reasons of the image kinds, besides the common ones of
// api/meta.
const (
	// ReasonScanFailed: the registry could not be listed.
	ReasonScanFailed = "ScanFailed"
	// ReasonAuthenticationFailed: the registry refused the credentials, or
	// they cannot be read.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonInsecureDisallowed: spec.insecure asks for plain HTTP, which
	// the controller refuses.
	ReasonInsecureDisallowed = "InsecureConnectionsDisallowed"
	// ReasonInvalidSpec: the spec is invalid in a way the schema cannot
	// tell (a regular expression that does not compile).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonInvalidImage: spec.image is not an image repository.
	ReasonInvalidImage = "InvalidImage"
	// ReasonUnsupportedProvider: spec.provider is one Windlass does not
	// serve; the same reason as meta.UnsupportedProviderReason, which the
	// source kinds use.
	ReasonUnsupportedProvider = "UnsupportedProvider"
	// ReasonInvalidPolicy: the policy's rule cannot be compiled.
	ReasonInvalidPolicy = "InvalidPolicy"
	// ReasonDependencyNotReady: the ImageRepository has no tags yet.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonAccessDenied: the ImageRepository does not let the policy's
	// namespace read it (spec.accessFrom), or cross-namespace references
	// are off.
	ReasonAccessDenied = "AccessDenied"
	// ReasonNoMatchingTag: no tag satisfies the policy.
	ReasonNoMatchingTag = "NoMatchingTag"
	// ReasonInvalidUpdateStrategy: spec.update is not one Windlass knows.
	ReasonInvalidUpdateStrategy = "InvalidUpdateStrategy"
	// ReasonInvalidSourceConfiguration: the source cannot be used (wrong
	// kind, missing, no URL, no ref to push to).
	ReasonInvalidSourceConfiguration = "InvalidSourceConfiguration"
	// ReasonGitOperationFailed: a clone, commit or push failed.
	ReasonGitOperationFailed = "GitOperationFailed"
	// ReasonPushRejected: the Git server refused the push (a protected
	// branch, a hook).
	ReasonPushRejected = "PushRejected"
	// ReasonUpdateFailed: the files could not be updated (a malformed
	// marker, a path outside the repository).
	ReasonUpdateFailed = "UpdateFailed"
	// ReasonInvalidPolicySelector: spec.policySelector is not a valid
	// label selector.
	ReasonInvalidPolicySelector = "InvalidPolicySelector"
	// ReasonRemovedTemplateField: the commit message template uses a
	// field that was removed (.Updated).
	ReasonRemovedTemplateField = "RemovedTemplateField"
	// ReasonInvalidTemplate: the commit message or branch template does
	// not parse or run.
	ReasonInvalidTemplate = "InvalidTemplate"
	// ReasonInvalidSigningKey: the signing key cannot be read.
	ReasonInvalidSigningKey = "InvalidSigningKey"
)

// ImageRef is a container image reference as a policy elects it.
type ImageRef struct {
	// Name is the image's repository, such as ghcr.io/org/app.
	// +required
	Name string `json:"name"`

	// Tag is the elected tag.
	// +required
	Tag string `json:"tag"`

	// Digest is the manifest digest of the tag, when the policy reflects
	// it (spec.digestReflectionPolicy).
	// +optional
	Digest string `json:"digest,omitempty"`
}

// String returns the reference as an image field holds it: name:tag, or
// name:tag@digest when the digest is known.
func (in ImageRef) String() string {
	s := in.Name + ":" + in.Tag
	if in.Digest != "" {
		s += "@" + in.Digest
	}
	return s
}
