// Package v1beta1 is the wire format of the events that controllers send
// to the notification controller (event.toolkit.fluxcd.io/v1beta1): a JSON
// document POSTed to its event endpoint, one event each.
package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group is the API group of the event format; metadata keys of a group's
// objects are prefixed with it.
const Group = "event.toolkit.fluxcd.io"

// Severities of an event.
const (
	// SeverityTrace is an event only traces care about; it is not sent to
	// providers.
	SeverityTrace = "trace"
	// SeverityInfo is an event about progress or success.
	SeverityInfo = "info"
	// SeverityError is an event about a failure.
	SeverityError = "error"
)

// Metadata keys of an event, without their group prefix where the
// reference writes one ("<group>/revision").
const (
	// MetaRevision is the revision the event concerns, written
	// "<group of the object's kind>/revision".
	MetaRevision = "revision"
	// MetaOriginRevision is the revision of the source an artifact came
	// from.
	MetaOriginRevision = "originRevision"
	// MetaToken identifies an event among those with the same message,
	// for deduplication.
	MetaToken = "token"
	// MetaCommitStatus, set to MetaCommitStatusUpdate, asks commit-status
	// providers to update the status of the revision.
	MetaCommitStatus = "commit_status"
	// MetaCommitStatusUpdate is the value of MetaCommitStatus.
	MetaCommitStatusUpdate = "update"
	// MetaChangeRequest names the pull or merge request an event concerns.
	MetaChangeRequest = "change_request"
	// MetaSummary is an Alert's summary, added to the events it sends.
	MetaSummary = "summary"
)

// MaxMessageLength is the longest message an event carries; a longer one
// is cut.
const MaxMessageLength = 39000

// Event is one event about one object.
type Event struct {
	// InvolvedObject is the object the event is about.
	InvolvedObject corev1.ObjectReference `json:"involvedObject"`
	// Severity is SeverityTrace, SeverityInfo or SeverityError.
	Severity string `json:"severity"`
	// Timestamp is when the event happened.
	Timestamp metav1.Time `json:"timestamp"`
	// Message is what happened, for people.
	Message string `json:"message"`
	// Reason is a short UpperCamelCase cause.
	Reason string `json:"reason"`
	// Metadata is more context: the revision, a token, an Alert's
	// eventMetadata.
	Metadata map[string]string `json:"metadata,omitempty"`
	// ReportingController is the controller that sent the event.
	ReportingController string `json:"reportingController"`
	// ReportingInstance is the instance of the controller that sent it.
	ReportingInstance string `json:"reportingInstance,omitempty"`
}

// HasRevision tells whether the event carries a revision.
func (e *Event) HasRevision() bool {
	_, ok := e.Revision()
	return ok
}

// Revision returns the revision the event concerns: the value of the
// metadata key that ends with "/revision".
func (e *Event) Revision() (string, bool) {
	for k, v := range e.Metadata {
		if len(k) > len(MetaRevision) && k[len(k)-len(MetaRevision)-1:] == "/"+MetaRevision {
			return v, true
		}
	}
	return "", false
}
