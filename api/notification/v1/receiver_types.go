package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// ReceiverKind is the kind name of Receiver.
const ReceiverKind = "Receiver"

// Receiver types that Windlass serves: each checks a request the way its
// service signs or authenticates it, before reading the body.
const (
	// ReceiverTypeGeneric accepts any request to the webhook path: the
	// path, salted with the token, is the secret.
	ReceiverTypeGeneric = "generic"
	// ReceiverTypeGenericHMAC checks the X-Signature header, an HMAC of
	// the body keyed with the token.
	ReceiverTypeGenericHMAC = "generic-hmac"
	ReceiverTypeGitHub      = "github"
	ReceiverTypeGitLab      = "gitlab"
	ReceiverTypeBitbucket   = "bitbucket"
	ReceiverTypeHarbor      = "harbor"
	ReceiverTypeDockerHub   = "dockerhub"
	ReceiverTypeQuay        = "quay"
	ReceiverTypeNexus       = "nexus"
	ReceiverTypeACR         = "acr"
	ReceiverTypeCDEvents    = "cdevents"
)

// ReceiverTypeGCR (Google Container Registry through Pub/Sub push with an
// OIDC token) is accepted by the schema, so that manifests written for the
// reference API apply unchanged, but Windlass does not serve it: the
// controller says so. (generic-oidc is refused by the schema: its
// oidcProviders field is not part of this API.)
const ReceiverTypeGCR = "gcr"

// ReceiverTypeServed reports whether Windlass serves a Receiver of type t.
func ReceiverTypeServed(t string) bool {
	switch t {
	case ReceiverTypeGeneric, ReceiverTypeGenericHMAC, ReceiverTypeGitHub, ReceiverTypeGitLab,
		ReceiverTypeBitbucket, ReceiverTypeHarbor, ReceiverTypeDockerHub, ReceiverTypeQuay,
		ReceiverTypeNexus, ReceiverTypeACR, ReceiverTypeCDEvents:
		return true
	}
	return false
}

// TokenKey is the key of the Receiver's Secret that holds the token.
const TokenKey = "token"

// WebhookPathPrefix starts the path of every Receiver's webhook.
const WebhookPathPrefix = "/hook/"

// DefaultReceiverInterval is the interval at which a Receiver is
// reconciled with its Secret when spec.interval is not set.
const DefaultReceiverInterval = 10 * time.Minute

// WildcardName, as a resource's name, selects every object of the kind in
// the namespace (those with matchLabels, when given).
const WildcardName = "*"

// GateKind is the kind of the Windlass Gate (gating.toolkit.fluxcd.io), a
// Receiver resource kind beyond the reference API.
const GateKind = "Gate"

// What a Receiver does to the Gates it names (ResourceReference.Action).
const (
	// GateActionOpen opens the gate, for its window, from the time of the
	// request.
	GateActionOpen = "open"
	// GateActionClose closes the gate, for its window, from the time of the
	// request.
	GateActionClose = "close"
)

// ResourceReference selects the objects a Receiver acts on.
// +kubebuilder:validation:XValidation:rule="!has(self.action) || self.kind == 'Gate'",message="action applies only to resources of kind Gate",fieldPath=".action"
type ResourceReference struct {
	// APIVersion of the objects, such as source.toolkit.fluxcd.io/v1;
	// defaults to the version Windlass stores the kind in.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the objects. Besides the kinds of the reference API, Windlass
	// accepts Gate (gating.toolkit.fluxcd.io): a request opens or closes
	// the gate (see Action), so that an approval in a chat tool or a CI job
	// can let a change through. ExternalArtifact is in the enum of the
	// reference API but refused at admission: no controller reconciles an
	// ExternalArtifact, its producer writes it.
	// +kubebuilder:validation:XValidation:rule="self != 'ExternalArtifact'",message="kind ExternalArtifact is not reconciled: its producer writes it; name the producer, such as its ArtifactGenerator"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Enum=Bucket;GitRepository;Kustomization;HelmRelease;HelmChart;HelmRepository;ImageRepository;ImagePolicy;ImageUpdateAutomation;OCIRepository;ArtifactGenerator;ExternalArtifact;Gate
	// +required
	Kind string `json:"kind"`

	// Name of the object, or '*' for every object of the kind.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the objects; defaults to the Receiver's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// MatchLabels, with name '*', selects only the objects that carry all
	// of these labels.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// Action is what a request does to a Gate: open (the default) or close.
	// Only resources of kind Gate take it. A Windlass extension.
	// +kubebuilder:validation:Enum=open;close
	// +optional
	Action string `json:"action,omitempty"`
}

// GetAction returns what a request does to the Gates this reference names:
// spec.action, open by default.
func (in *ResourceReference) GetAction() string {
	if in.Action == "" {
		return GateActionOpen
	}
	return in.Action
}

// Duration fields carry the XValidation marker of every Windlass duration
// (see GitRepositorySpec.Interval in api/source/v1/gitrepository_types.go).

// ReceiverSpec is the desired state of a Receiver.
type ReceiverSpec struct {
	// Type of the service that calls the webhook; it says how a request is
	// checked and which events it carries. Every type Windlass serves is
	// accepted, and gcr, which it does not serve.
	// +kubebuilder:validation:Enum=generic;generic-hmac;github;gitlab;bitbucket;harbor;dockerhub;quay;gcr;nexus;acr;cdevents
	// +required
	Type string `json:"type"`

	// Interval at which the Receiver is reconciled with its Secret;
	// defaults to 10m.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Events are the event types to act on, such as push (GitHub) or
	// "Push Hook" (GitLab), for the types whose requests name one; empty
	// means every event.
	// +optional
	Events []string `json:"events,omitempty"`

	// Resources are the objects to reconcile (or the Gates to open or
	// close) when a valid request arrives.
	// +required
	Resources []ResourceReference `json:"resources"`

	// ResourceFilter is a CEL expression over res (each object selected)
	// and req (the request's JSON body) that must be true for the object to
	// be acted on.
	// +optional
	ResourceFilter string `json:"resourceFilter,omitempty"`

	// SecretRef names a Secret in the same namespace whose token key salts
	// the webhook path and, depending on the type, signs or authenticates
	// the requests.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// Suspend stops the Receiver: its webhook answers no request.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ReceiverStatus is the observed state of a Receiver.
type ReceiverStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the Receiver.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// WebhookPath is the path the webhook is served at:
	// /hook/<hex sha256 of token+name+namespace>.
	// +optional
	WebhookPath string `json:"webhookPath,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Receiver is an incoming webhook: a request that passes the check of its
// type asks for the reconciliation of the objects it names.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type Receiver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReceiverSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ReceiverStatus `json:"status,omitempty"`
}

// WebhookPath returns the path the Receiver's webhook is served at for
// token: /hook/ followed by the hex SHA-256 of token, name and namespace,
// so that the path is secret as long as the token is.
func (in *Receiver) WebhookPath(token string) string {
	sum := sha256.Sum256([]byte(token + in.Name + in.Namespace))
	return WebhookPathPrefix + hex.EncodeToString(sum[:])
}

// GetInterval returns the interval at which the Receiver is reconciled,
// 10m by default.
func (in *Receiver) GetInterval() time.Duration {
	if in.Spec.Interval == nil || in.Spec.Interval.Duration <= 0 {
		return DefaultReceiverInterval
	}
	return in.Spec.Interval.Duration
}

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *Receiver) GetRequeueAfter() time.Duration {
	return in.GetInterval()
}

// IsSuspended reports whether the Receiver answers no request
// (spec.suspend).
func (in *Receiver) IsSuspended() bool { return in.Spec.Suspend }

// GetConditions returns the object's conditions.
func (in *Receiver) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the object's conditions.
func (in *Receiver) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// SetObservedGeneration records the generation the controller acted on.
func (in *Receiver) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *Receiver) GetObservedGeneration() int64 {
	return in.Status.ObservedGeneration
}

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *Receiver) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}

// +kubebuilder:object:root=true

// ReceiverList is a list of Receivers.
type ReceiverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Receiver `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Receiver{}, &ReceiverList{})
}
