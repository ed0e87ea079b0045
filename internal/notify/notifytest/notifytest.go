// Package notifytest builds the messages that the notifiers' tests and
// fuzz targets send: one event, its metadata and its folding, from plain
// arguments a fuzzer can vary.
package notifytest

import (
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// Message builds an event about Kind/name.namespace at a fixed time,
// reported by kustomize-controller, whose metadata holds the revision
// (under a /revision key) and key: value, when they are not empty.
func Message(kind, name, namespace, reason, text, revision, key, value string, failed, resolves bool, folded uint8) notify.Message {
	m := notify.Message{Event: eventv1.Event{
		InvolvedObject:      corev1.ObjectReference{Kind: kind, Name: name, Namespace: namespace},
		Severity:            eventv1.SeverityInfo,
		Timestamp:           metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		Message:             text,
		Reason:              reason,
		Metadata:            map[string]string{},
		ReportingController: "kustomize-controller",
	}, Folded: int(folded), Resolves: resolves}
	if failed {
		m.Severity = eventv1.SeverityError
	}
	if revision != "" {
		m.Metadata["kustomize.toolkit.fluxcd.io/"+eventv1.MetaRevision] = revision
	}
	if key != "" {
		m.Metadata[key] = value
	}
	return m
}

// ValidUTF8 tells whether every string is valid UTF-8: JSON can carry
// only those unchanged.
func ValidUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
