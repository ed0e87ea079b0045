package v1beta3

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// ProviderKind is the kind name of Provider.
const ProviderKind = "Provider"

// DefaultProviderTimeout is how long a notification may take when
// spec.timeout is not set.
const DefaultProviderTimeout = 15 * time.Second

// Provider types that Windlass serves: each sends the payload its service
// documents.
const (
	// ProviderTypeGeneric POSTs the event as JSON.
	ProviderTypeGeneric = "generic"
	// ProviderTypeGenericHMAC POSTs the event as JSON, signed with an HMAC
	// of the body in the X-Signature header.
	ProviderTypeGenericHMAC = "generic-hmac"
	ProviderTypeSlack       = "slack"
	ProviderTypeMSTeams     = "msteams"
	ProviderTypeDiscord     = "discord"
	ProviderTypeGoogleChat  = "googlechat"
	ProviderTypeRocket      = "rocket"
	ProviderTypeMatrix      = "matrix"
	ProviderTypeWebex       = "webex"
	ProviderTypeTelegram    = "telegram"
	ProviderTypeLark        = "lark"
	ProviderTypeZulip       = "zulip"
	// ProviderTypeAlertmanager and ProviderTypePagerDuty resolve the
	// incident of a failure when the object recovers.
	ProviderTypeAlertmanager = "alertmanager"
	ProviderTypePagerDuty    = "pagerduty"
	// ProviderTypeGrafana writes annotations.
	ProviderTypeGrafana  = "grafana"
	ProviderTypeOpsgenie = "opsgenie"
	ProviderTypeDatadog  = "datadog"
	ProviderTypeSentry   = "sentry"
	// ProviderTypeGitHubDispatch creates repository_dispatch events.
	ProviderTypeGitHubDispatch = "githubdispatch"

	// The commit-status types set the status of the revision an event
	// names, keyed by the object (see spec.commitStatusExpr).

	ProviderTypeGitHub          = "github"
	ProviderTypeGitLab          = "gitlab"
	ProviderTypeGitea           = "gitea"
	ProviderTypeBitbucket       = "bitbucket"
	ProviderTypeBitbucketServer = "bitbucketserver"
	ProviderTypeAzureDevOps     = "azuredevops"
)

// Provider types served since the reference added them: a chat message,
// an alert event, a span, a message on a subject, a comment on a pull or
// merge request.
const (
	ProviderTypeZoom                      = "zoom"
	ProviderTypeIncidentIO                = "incident.io"
	ProviderTypeOTel                      = "otel"
	ProviderTypeNATS                      = "nats"
	ProviderTypeGitHubPullRequestComment  = "githubpullrequestcomment"
	ProviderTypeGitLabMergeRequestComment = "gitlabmergerequestcomment"
	ProviderTypeGiteaPullRequestComment   = "giteapullrequestcomment"
)

// Provider types that the schema's enum keeps, as the reference API has
// them, but that Windlass does not serve: the API server refuses a
// Provider of one of these types (see ProviderSpec.Type).
const (
	ProviderTypeAzureEventHub = "azureeventhub"
	ProviderTypeGooglePubSub  = "googlepubsub"
)

// ProviderTypeServed reports whether Windlass sends notifications for a
// Provider of type t.
func ProviderTypeServed(t string) bool {
	switch t {
	case ProviderTypeGeneric, ProviderTypeGenericHMAC, ProviderTypeSlack, ProviderTypeMSTeams,
		ProviderTypeDiscord, ProviderTypeGoogleChat, ProviderTypeRocket, ProviderTypeMatrix,
		ProviderTypeWebex, ProviderTypeTelegram, ProviderTypeLark, ProviderTypeZulip,
		ProviderTypeAlertmanager, ProviderTypePagerDuty, ProviderTypeGrafana, ProviderTypeOpsgenie,
		ProviderTypeDatadog, ProviderTypeSentry, ProviderTypeGitHubDispatch,
		ProviderTypeZoom, ProviderTypeIncidentIO, ProviderTypeOTel, ProviderTypeNATS,
		ProviderTypeGitHubPullRequestComment, ProviderTypeGitLabMergeRequestComment, ProviderTypeGiteaPullRequestComment:
		return true
	}
	return IsCommitStatusType(t)
}

// IsCommitStatusType reports whether a Provider of type t sets Git commit
// statuses, the types that spec.commitStatusExpr applies to.
func IsCommitStatusType(t string) bool {
	switch t {
	case ProviderTypeGitHub, ProviderTypeGitLab, ProviderTypeGitea, ProviderTypeBitbucket,
		ProviderTypeBitbucketServer, ProviderTypeAzureDevOps:
		return true
	}
	return false
}

// Duration fields carry the XValidation marker of every Windlass duration
// (see GitRepositorySpec.Interval in api/source/v1/gitrepository_types.go).

// ProviderSpec says where and how notifications are sent.
type ProviderSpec struct {
	// Type of the service that receives the notifications. Every type of the
	// reference API is in the enum; azureeventhub and googlepubsub are
	// refused at admission because Windlass does not serve them.
	// +kubebuilder:validation:XValidation:rule="!(self in ['azureeventhub', 'googlepubsub'])",messageExpression="'provider type ' + self + ' is not served by Windlass'"
	// +kubebuilder:validation:Enum=generic;generic-hmac;slack;msteams;discord;googlechat;rocket;matrix;webex;telegram;lark;zulip;zoom;alertmanager;pagerduty;grafana;opsgenie;datadog;sentry;incident.io;otel;githubdispatch;azureeventhub;googlepubsub;nats;github;gitlab;gitea;bitbucket;bitbucketserver;azuredevops;githubpullrequestcomment;gitlabmergerequestcomment;giteapullrequestcomment
	// +required
	Type string `json:"type"`

	// Interval is accepted for compatibility and ignored: a Provider is
	// read when an event arrives. Deprecated.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Channel the notifications are posted to, for the types that have
	// channels (a Slack channel, a Telegram chat, a Matrix room, ...).
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Channel string `json:"channel,omitempty"`

	// Username the notifications are posted as, where the service allows
	// it; the Secret's username key overrides it.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Username string `json:"username,omitempty"`

	// Address of the service: an HTTP(S) URL for most types, a repository
	// URL for the commit-status types. The Secret's address key overrides
	// it; an address that holds a credential belongs there.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Address string `json:"address,omitempty"`

	// Timeout of sending one notification; defaults to 15s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Proxy is the HTTP(S) address of a proxy to send through. Deprecated:
	// use ProxySecretRef, which keeps proxy credentials out of the object.
	// +kubebuilder:validation:Pattern="^(http|https)://.*$"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Proxy string `json:"proxy,omitempty"`

	// ProxySecretRef names a Secret in the same namespace with the proxy to
	// send through: address, and optionally username and password.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// SecretRef names a Secret in the same namespace with the credentials
	// of the service: address, token, username, password, headers (a YAML
	// map of HTTP headers to add), proxy.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the same namespace with the TLS
	// material to reach the service: ca.crt (a CA to trust), and tls.crt
	// with tls.key (a client certificate).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ServiceAccountName is the service account whose identity the
	// workload-identity types (azureeventhub, azuredevops, googlepubsub)
	// authenticate with; Windlass does not implement workload identity for
	// Providers yet, so a Provider that sets it is refused at admission.
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",messageExpression="'spec.serviceAccountName ' + self + ' is not served by Windlass: workload identity for Providers is not implemented; use spec.secretRef'"
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CommitStatusExpr is a CEL expression over event, provider and alert
	// that evaluates to the string identifying the commit status, for the
	// commit-status types; by default the status is identified by the
	// object's kind and name and by the Provider.
	// +optional
	CommitStatusExpr string `json:"commitStatusExpr,omitempty"`

	// Suspend stops sending notifications through this Provider.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Provider says where and how notifications are sent: the service, its
// address and credentials. It has no status: it is read when an event
// arrives.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
}

// GetTimeout returns the timeout of sending one notification, 15s by
// default.
func (in *Provider) GetTimeout() time.Duration {
	if in.Spec.Timeout == nil || in.Spec.Timeout.Duration <= 0 {
		return DefaultProviderTimeout
	}
	return in.Spec.Timeout.Duration
}

// IsSuspended reports whether the Provider sends nothing (spec.suspend).
func (in *Provider) IsSuspended() bool { return in.Spec.Suspend }

// GetConditions returns no condition: a Provider has no status (see
// Alert.GetConditions).
func (in *Provider) GetConditions() []metav1.Condition { return nil }

// +kubebuilder:object:root=true

// ProviderList is a list of Providers.
type ProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Provider{}, &ProviderList{})
}
