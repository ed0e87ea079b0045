// Package notifytest builds the messages that the notifiers' tests and
// fuzz targets send: one event, its metadata and its folding, from plain
// arguments a fuzzer can vary.
package notifytest

import (
	"strings"
	"testing"
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

// AddSeeds adds to f, a fuzz target that takes Message's arguments, seeds
// of the events notifiers see (an applied revision, a failed upgrade, a
// commit status, an empty event, one of long texts), and one of markup
// whose object name, text and metadata value a notifier's format must
// escape: name, text and value, resolving when resolves.
func AddSeeds(f *testing.F, name, text, value string, resolves bool) {
	f.Add("Kustomization", "webapp", "apps", "ReconciliationSucceeded", "Applied revision main@sha1:731f7ead",
		"main@sha1:731f7eaddfb6af01cb2173e18f0f75b0ba780ef1", "summary", "Cluster: prod", false, false, uint8(0))
	f.Add("HelmRelease", "podinfo", "flux-system", "UpgradeFailed", "Helm upgrade failed: timed out\nwaiting for the condition",
		"6.5.0", "helm.toolkit.fluxcd.io/token", "dedup-7f3a", true, false, uint8(41))
	f.Add("GitRepository", "repo", "default", "Resolved", "Fetched", "refs/heads/main@sha1:0123",
		"notification.toolkit.fluxcd.io/commit_status", "update", true, true, uint8(1))
	f.Add("", "", "", "", "", "", "", "", false, false, uint8(0))
	f.Add("Kind", name, "ns", "Reason", text, "é\xffü", "a/revision", value, true, resolves, uint8(255))
	f.Add("Kind", strings.Repeat("n", 300), "ns", strings.Repeat("Ré", 200), strings.Repeat("ü", 30000),
		strings.Repeat("β", 300), strings.Repeat("k", 300), strings.Repeat("ü", 2000), true, false, uint8(3))
}
