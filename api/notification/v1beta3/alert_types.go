package v1beta3

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// AlertKind is the kind name of Alert.
const AlertKind = "Alert"

// Severities an Alert filters on (spec.eventSeverity).
const (
	// EventSeverityInfo forwards every event, errors included.
	EventSeverityInfo = "info"
	// EventSeverityError forwards only the events of severity error.
	EventSeverityError = "error"
)

// WildcardName, as an event source's name, selects every object of the
// kind in the namespace (those with matchLabels, when given).
const WildcardName = "*"

// EventSource selects the objects whose events an Alert forwards.
type EventSource struct {
	// APIVersion of the objects; any version of the kind when empty.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the objects.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Enum=Bucket;GitRepository;Kustomization;HelmRelease;HelmChart;HelmRepository;ImageRepository;ImagePolicy;ImageUpdateAutomation;OCIRepository;ArtifactGenerator;ExternalArtifact
	// +required
	Kind string `json:"kind"`

	// Name of the object, or '*' for every object of the kind.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the objects; defaults to the Alert's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// MatchLabels, with name '*', selects only the objects that carry all
	// of these labels.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// AlertSpec says which events go to which Provider.
type AlertSpec struct {
	// ProviderRef names the Provider, in the same namespace, that the
	// events go to.
	// +required
	ProviderRef meta.LocalObjectReference `json:"providerRef"`

	// EventSources select the objects whose events are forwarded.
	// +required
	EventSources []EventSource `json:"eventSources"`

	// EventSeverity filters the events: info forwards every event, error
	// only the errors.
	// +kubebuilder:validation:Enum=info;error
	// +kubebuilder:default=info
	// +optional
	EventSeverity string `json:"eventSeverity,omitempty"`

	// InclusionList holds Go regular expressions: when set, only the events
	// whose message matches one of them are forwarded.
	// +optional
	InclusionList []string `json:"inclusionList,omitempty"`

	// ExclusionList holds Go regular expressions: the events whose message
	// matches one of them are not forwarded, even when InclusionList
	// matches too.
	// +optional
	ExclusionList []string `json:"exclusionList,omitempty"`

	// EventMetadata is added to the metadata of every event forwarded. The
	// event's own metadata wins over it; it wins over the
	// event.toolkit.fluxcd.io/* annotations of the object.
	// +optional
	EventMetadata map[string]string `json:"eventMetadata,omitempty"`

	// Summary is added to the events' metadata under "summary". Deprecated:
	// use eventMetadata.summary.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Summary string `json:"summary,omitempty"`

	// Suspend stops forwarding events for this Alert.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Alert forwards the events of the objects it selects to a Provider. It
// has no status: it is read when an event arrives.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Severity",type=string,JSONPath=`.spec.eventSeverity`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Alert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AlertSpec `json:"spec,omitempty"`
}

// GetEventSeverity returns the severity the Alert filters on, info by
// default.
func (in *Alert) GetEventSeverity() string {
	if in.Spec.EventSeverity == "" {
		return EventSeverityInfo
	}
	return in.Spec.EventSeverity
}

// IsSuspended reports whether the Alert forwards nothing (spec.suspend).
func (in *Alert) IsSuspended() bool { return in.Spec.Suspend }

// GetConditions returns no condition: an Alert has no status. With it an
// Alert reads like every other toolkit object to tools that list objects
// with their conditions (its readiness is then unknown); the problems of
// an Alert are reported as events on it.
func (in *Alert) GetConditions() []metav1.Condition { return nil }

// +kubebuilder:object:root=true

// AlertList is a list of Alerts.
type AlertList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Alert `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Alert{}, &AlertList{})
}
