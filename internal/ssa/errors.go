package ssa

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-dev/windlass/internal/inventory"
)

// ObjectError is why one object failed. Its message is safe to show: for a
// Secret it holds neither the Secret's data nor any server text that could
// echo it.
type ObjectError struct {
	// Object identifies the object.
	Object inventory.ObjMetadata
	// Reason is the API status reason when the API server refused the
	// request, such as Invalid or Forbidden; empty otherwise.
	Reason metav1.StatusReason
	// Message says why, without object data.
	Message string
}

// Error returns "Kind/namespace/name: message".
func (e *ObjectError) Error() string {
	return e.Object.Subject() + ": " + e.Message
}

// ValidationError is returned when the server-side dry run refuses some
// objects; nothing of the failed stage was applied. In a Fresh apply
// (Partial), the apply refused them, and the other objects of the stage
// were applied: the ChangeSet lists them.
type ValidationError struct {
	// Failures holds one error per refused object.
	Failures []*ObjectError
	// Partial is set when the objects were refused by the apply of a
	// Fresh set rather than by a dry run.
	Partial bool
}

// Error names every failing object and why.
func (e *ValidationError) Error() string {
	if e.Partial {
		return "apply refused: " + joinFailures(e.Failures)
	}
	return "dry-run failed: " + joinFailures(e.Failures)
}

// ApplyError is returned when applying some objects failed. The ChangeSet
// returned beside it lists the objects applied before and around them.
type ApplyError struct {
	// Failures holds one error per failed object.
	Failures []*ObjectError
}

// Error names every failing object and why.
func (e *ApplyError) Error() string {
	return "apply failed: " + joinFailures(e.Failures)
}

// PruneError is returned when some stale objects could not be deleted, for
// example because an admission webhook or policy refused the deletion. The
// other objects were deleted; the Survivors must stay in the inventory so
// that the next prune retries them.
type PruneError struct {
	// Failures holds one error per object that was not deleted.
	Failures []*ObjectError
	// Survivors are the entries to keep in the inventory.
	Survivors []inventory.Entry
}

// Error names every object that survived and why.
func (e *PruneError) Error() string {
	return "prune failed: " + joinFailures(e.Failures)
}

// Survivors returns the inventory entries a failed prune left behind, or
// nil when err is not (or does not wrap) a *PruneError.
func Survivors(err error) []inventory.Entry {
	var pe *PruneError
	if errors.As(err, &pe) {
		return pe.Survivors
	}
	return nil
}

func joinFailures(failures []*ObjectError) string {
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		parts = append(parts, f.Error())
	}
	return strings.Join(parts, "; ")
}

// minRedactedLen is the length under which a Secret value is not searched
// for in messages: shorter strings would match ordinary words.
const minRedactedLen = 4

// redacted replaces secret values in messages.
const redacted = "[redacted]"

// newObjectError describes err for the object obj (the object as the caller
// gave it, whose values are scrubbed from the message).
func newObjectError(id inventory.ObjMetadata, obj *unstructured.Unstructured, err error) *ObjectError {
	oe := &ObjectError{Object: id, Message: err.Error()}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		oe.Reason = status.Status().Reason
		if isSecret(id) {
			oe.Message = secretStatusMessage(status.Status())
		}
	}
	oe.Message = scrub(oe.Message, sensitiveValues(id, obj))
	return oe
}

// newObjectErrorf is newObjectError for an error made here, which holds no
// object data.
func newObjectErrorf(id inventory.ObjMetadata, format string, args ...any) *ObjectError {
	return &ObjectError{Object: id, Message: fmt.Sprintf(format, args...)}
}

func isSecret(id inventory.ObjMetadata) bool {
	return id.Group == "" && id.Kind == "Secret"
}

// secretStatusMessage rebuilds the API server's message for a Secret from
// its structured parts, leaving out the parts that may quote a value
// ("Invalid value: ...").
func secretStatusMessage(s metav1.Status) string {
	reason := string(s.Reason)
	if reason == "" {
		reason = "Failure"
	}
	if s.Details == nil || len(s.Details.Causes) == 0 {
		if s.Reason == metav1.StatusReasonNotFound || s.Reason == metav1.StatusReasonAlreadyExists ||
			s.Reason == metav1.StatusReasonConflict {
			return s.Message
		}
		return reason + " (the server's message is withheld for Secrets)"
	}
	causes := make([]string, 0, len(s.Details.Causes))
	for _, c := range s.Details.Causes {
		switch c.Type {
		case metav1.CauseTypeForbidden, metav1.CauseTypeFieldValueRequired,
			metav1.CauseTypeTooLong, metav1.CauseTypeFieldManagerConflict:
			// These messages never quote the value.
			causes = append(causes, fmt.Sprintf("%s: %s", c.Field, c.Message))
		default:
			causes = append(causes, fmt.Sprintf("%s: %s", c.Field, c.Type))
		}
	}
	return reason + ": " + strings.Join(causes, ", ")
}

// sensitiveValues returns the strings that must never appear in a message
// about obj: kubectl's last-applied configuration, and for Secrets every
// data value (encoded and decoded) and every stringData value.
func sensitiveValues(id inventory.ObjMetadata, obj *unstructured.Unstructured) []string {
	if obj == nil {
		return nil
	}
	var values []string
	if v := obj.GetAnnotations()[LastAppliedConfigAnnotation]; v != "" {
		values = append(values, v)
	}
	if !isSecret(id) {
		return values
	}
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	for _, v := range data {
		s, ok := v.(string)
		if !ok {
			continue
		}
		values = append(values, s)
		if decoded, err := base64.StdEncoding.DecodeString(s); err == nil {
			values = append(values, string(decoded))
		}
	}
	stringData, _, _ := unstructured.NestedMap(obj.Object, "stringData")
	for _, v := range stringData {
		if s, ok := v.(string); ok {
			values = append(values, s)
		}
	}
	return values
}

// SecretValues returns the strings that must never appear in a message
// about obj: for a Secret, every data value (encoded and decoded) and
// every stringData value, and for any object kubectl's last-applied
// configuration.
func SecretValues(obj *unstructured.Unstructured) []string {
	gvk := obj.GroupVersionKind()
	return sensitiveValues(inventory.ObjMetadata{Group: gvk.Group, Kind: gvk.Kind}, obj)
}

// Scrub returns msg with every value of at least four characters
// replaced by "[redacted]", longer values first.
func Scrub(msg string, values []string) string {
	return scrub(msg, values)
}

// scrub replaces every value of at least minRedactedLen characters in msg.
// Longer values go first, so that a value holding another is replaced whole.
func scrub(msg string, values []string) string {
	values = slices.Clone(values)
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		if len(v) >= minRedactedLen {
			msg = strings.ReplaceAll(msg, v, redacted)
		}
	}
	return msg
}
