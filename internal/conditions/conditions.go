// Package conditions reads and writes the status conditions of Windlass
// objects. Conditions follow kstatus: Ready tells the outcome of the last
// reconciliation; Reconciling and Stalled, like the kinds' own failure
// conditions, are abnormal-true and are removed once they no longer hold.
//
// Every setter stamps the condition with the object's current generation,
// keeps LastTransitionTime unless the status changes, and removes credentials
// from URLs in the message.
package conditions

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Getter is an object whose conditions can be read.
type Getter interface {
	client.Object
	GetConditions() []metav1.Condition
}

// Setter is an object whose conditions can be read and written.
type Setter interface {
	Getter
	SetConditions([]metav1.Condition)
}

// Get returns the condition of the given type, or nil.
func Get(obj Getter, conditionType string) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.GetConditions(), conditionType)
}

// Has reports whether the object has a condition of the given type.
func Has(obj Getter, conditionType string) bool {
	return Get(obj, conditionType) != nil
}

// IsTrue reports whether the condition is present and True.
func IsTrue(obj Getter, conditionType string) bool {
	return apimeta.IsStatusConditionTrue(obj.GetConditions(), conditionType)
}

// IsFalse reports whether the condition is present and False.
func IsFalse(obj Getter, conditionType string) bool {
	return apimeta.IsStatusConditionFalse(obj.GetConditions(), conditionType)
}

// InProgress reports whether obj is Reconciling for progress or a wait:
// Reconciling=True with any reason but ProgressingWithRetry, which marks
// a retry after a failure.
func InProgress(obj Getter) bool {
	return IsTrue(obj, meta.ReconcilingCondition) && Reason(obj, meta.ReconcilingCondition) != meta.ProgressingWithRetryReason
}

// Reason returns the reason of the condition, or "".
func Reason(obj Getter, conditionType string) string {
	if c := Get(obj, conditionType); c != nil {
		return c.Reason
	}
	return ""
}

// Message returns the message of the condition, or "".
func Message(obj Getter, conditionType string) string {
	if c := Get(obj, conditionType); c != nil {
		return c.Message
	}
	return ""
}

// Set writes a condition with the given status, reason and message.
func Set(obj Setter, conditionType string, status metav1.ConditionStatus, reason, messageFormat string, args ...any) {
	conditions := obj.GetConditions()
	apimeta.SetStatusCondition(&conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message(messageFormat, args),
		ObservedGeneration: obj.GetGeneration(),
	})
	obj.SetConditions(conditions)
}

// MarkTrue sets the condition to True.
func MarkTrue(obj Setter, conditionType, reason, messageFormat string, args ...any) {
	Set(obj, conditionType, metav1.ConditionTrue, reason, messageFormat, args...)
}

// MarkFalse sets the condition to False.
func MarkFalse(obj Setter, conditionType, reason, messageFormat string, args ...any) {
	Set(obj, conditionType, metav1.ConditionFalse, reason, messageFormat, args...)
}

// MarkUnknown sets the condition to Unknown.
func MarkUnknown(obj Setter, conditionType, reason, messageFormat string, args ...any) {
	Set(obj, conditionType, metav1.ConditionUnknown, reason, messageFormat, args...)
}

// Delete removes the condition of the given type.
func Delete(obj Setter, conditionType string) {
	conditions := obj.GetConditions()
	if apimeta.RemoveStatusCondition(&conditions, conditionType) {
		obj.SetConditions(conditions)
	}
}

// maxMessageLength bounds condition messages, well under the API's limit of
// 32768, so that a long error never makes a status patch fail.
const maxMessageLength = 4096

func message(format string, args []any) string {
	m := format
	if len(args) > 0 {
		m = fmt.Sprintf(format, args...)
	}
	m = redact.String(m)
	if len(m) > maxMessageLength {
		m = m[:maxMessageLength-3] + "..."
	}
	return m
}

// HeldByGate says which gate holds obj, at generation, back: the first
// line of the message of Approved=False or Blocked=True with the reason
// GateClosed, or "".
func HeldByGate(obj Getter, generation int64) string {
	for _, c := range []struct {
		condition string
		held      metav1.ConditionStatus
	}{{meta.ApprovedCondition, metav1.ConditionFalse}, {meta.BlockedCondition, metav1.ConditionTrue}} {
		if got := Get(obj, c.condition); got != nil && got.Status == c.held &&
			got.Reason == meta.GateClosedReason && got.ObservedGeneration == generation {
			line, _, _ := strings.Cut(got.Message, "\n")
			return line
		}
	}
	return ""
}
