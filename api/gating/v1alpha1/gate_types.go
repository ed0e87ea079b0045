package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// GateKind is the kind name of Gate.
const GateKind = "Gate"

// Annotations that open and close a gate: each holds an RFC 3339 time, the
// time the request takes effect.
const (
	OpenRequestAnnotation  = "open.gate.fluxcd.io/requestedAt"
	CloseRequestAnnotation = "close.gate.fluxcd.io/requestedAt"
)

// Annotations that say why a gate was opened or closed, beside the request
// of the same action: the reason shows in the gate's Opened condition and
// in the event of the transition it causes (a Windlass extension).
const (
	OpenReasonAnnotation  = "open.gate.windlass.dev/reason"
	CloseReasonAnnotation = "close.gate.windlass.dev/reason"
)

// LastRequestAnnotation names the action ("open" or "close") of the last
// request the command line or the web UI made: requests are stamped to the
// second, and of an open and a close request stamped with the same second
// the one it names wins (without it, closing wins). A Windlass extension.
const LastRequestAnnotation = "gate.windlass.dev/last-request"

// GateState is whether a gate lets changes through.
// +kubebuilder:validation:Enum=opened;closed
type GateState string

// The states of a gate.
const (
	GateOpened GateState = "opened"
	GateClosed GateState = "closed"
)

// ScheduleAction is the state a schedule imposes while it is active.
// +kubebuilder:validation:Enum=open;close
type ScheduleAction string

// The actions of a schedule.
const (
	ScheduleOpen  ScheduleAction = "open"
	ScheduleClose ScheduleAction = "close"
)

// OpenedCondition is True while the gate is open.
const OpenedCondition = "Opened"

// RequestInvalidCondition is True while an open or close annotation cannot
// be parsed: the request is ignored (abnormal-true; Ready is False).
const RequestInvalidCondition = "RequestInvalid"

// Reasons of a Gate's conditions.
const (
	// InvalidRequestReason: an open or close annotation does not hold an
	// RFC 3339 time; the request is ignored.
	InvalidRequestReason = "InvalidRequest"
	// InvalidScheduleReason: a schedule's cron, duration or time zone is
	// invalid; the gate stays closed until the spec is fixed.
	InvalidScheduleReason = "InvalidSchedule"
	// InvalidWindowReason: the window is not a positive duration; the gate
	// stays closed until the spec is fixed.
	InvalidWindowReason = "InvalidWindow"
)

// Duration fields carry the XValidation marker of every Windlass duration
// (see GitRepositorySpec.Interval in api/source/v1/gitrepository_types.go).

// GateSpec is the desired behaviour of a Gate.
type GateSpec struct {
	// Interval at which the gate is evaluated again; a transition due
	// sooner is evaluated on time.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +kubebuilder:default="30s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Default is the state of the gate when no request and no schedule
	// applies.
	// +kubebuilder:default=closed
	// +optional
	Default GateState `json:"default,omitempty"`

	// Window is how long a request (an open or close annotation) lasts
	// from its time, before the gate returns to its default.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +kubebuilder:default="1h"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`

	// Schedules are recurring windows in which the gate is opened or
	// closed, unless a request is in force.
	// +optional
	Schedules []GateSchedule `json:"schedules,omitempty"`

	// Suspend stops the evaluation of the gate: it keeps its last state.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// AllowedReceivers are the Receivers of other namespaces that may open
	// or close the gate. A Receiver in the gate's own namespace always may;
	// one in another namespace only when it is listed here.
	// +optional
	AllowedReceivers []meta.NamespacedObjectReference `json:"allowedReceivers,omitempty"`
}

// GateSchedule is a recurring window.
type GateSchedule struct {
	// Action is the state the schedule imposes while it is active.
	// +required
	Action ScheduleAction `json:"action"`

	// Cron is when each window starts, in the five fields of cron(8),
	// evaluated in TimeZone.
	// +required
	Cron string `json:"cron"`

	// Duration is how long each window lasts.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA name of the zone Cron is evaluated in, so that
	// daylight-saving changes are right; UTC by default.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// GateStatus is the observed state of a Gate.
type GateStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the Gate: Opened, and Ready, Reconciling and Stalled.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// RequestedAt is the time of the request in force, if any.
	// +optional
	RequestedAt *metav1.Time `json:"requestedAt,omitempty"`

	// ResetToDefaultAt is when the request in force lapses.
	// +optional
	ResetToDefaultAt *metav1.Time `json:"resetToDefaultAt,omitempty"`

	// NextTransition is the next time the state will change by itself (a
	// request lapsing, a planned request, a schedule starting or ending).
	// +optional
	NextTransition *metav1.Time `json:"nextTransition,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Gate is the Schema for the gates API: a gate that people and schedules
// open and close, and that sources and appliers wait behind.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all;fluxcd
// +kubebuilder:printcolumn:name="Opened",type="string",JSONPath=".status.conditions[?(@.type==\"Opened\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Opened\")].message"
// +kubebuilder:printcolumn:name="Next",type="string",JSONPath=".status.nextTransition"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Gate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GateSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status GateStatus `json:"status,omitempty"`
}

// GetConditions returns the object's conditions.
func (in *Gate) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the object's conditions.
func (in *Gate) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// Defaults of a Gate's spec, as the CRD sets them.
const (
	DefaultInterval = 30 * time.Second
	DefaultWindow   = time.Hour
)

// GetRequeueAfter returns the interval at which to evaluate the gate.
func (in *Gate) GetRequeueAfter() time.Duration {
	if in.Spec.Interval == nil || in.Spec.Interval.Duration <= 0 {
		return DefaultInterval
	}
	return in.Spec.Interval.Duration
}

// GetWindow returns how long a request lasts.
func (in *Gate) GetWindow() time.Duration {
	if in.Spec.Window == nil {
		return DefaultWindow
	}
	return in.Spec.Window.Duration
}

// IsSuspended reports whether evaluation is suspended (spec.suspend).
func (in *Gate) IsSuspended() bool {
	return in.Spec.Suspend
}

// AllowsReceiver reports whether the Receiver namespace/name may open or
// close the gate: one of its own namespace always may, another only when
// spec.allowedReceivers lists it.
func (in *Gate) AllowsReceiver(namespace, name string) bool {
	if namespace == in.Namespace {
		return true
	}
	for _, ref := range in.Spec.AllowedReceivers {
		if ref.Name == name && ref.Namespace == namespace {
			return true
		}
	}
	return false
}

// GetObservedGeneration returns the last generation the controller acted on.
func (in *Gate) GetObservedGeneration() int64 {
	return in.Status.ObservedGeneration
}

// IsOpened reports whether the gate's Opened condition is True for its
// current generation.
func (in *Gate) IsOpened() bool {
	for _, c := range in.Status.Conditions {
		if c.Type == OpenedCondition {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// GateList is a list of Gates.
//
// +kubebuilder:object:root=true
type GateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Gate{}, &GateList{})
}

// SetObservedGeneration records the generation the controller acted on.
func (in *Gate) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// SetLastHandledReconcileRequest records the reconcile request handled.
func (in *Gate) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
