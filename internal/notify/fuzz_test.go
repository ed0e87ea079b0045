package notify

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
)

// FuzzScrubber scrubs fuzzed text of a Config's fuzzed token, password,
// username, header and an extra secret. It asserts that no secret the
// Scrubber holds (the token, the password and the extra secret among
// them) is left in the text, unless it holds the mask's '*'; and that
// Error keeps a *StatusError one, scrubbed, and keeps errors.Is on
// another error while its text is the scrubbed text.
func FuzzScrubber(f *testing.F) {
	f.Add("t0ken-xyz", "pa55word", "bot", "Bearer api-key-123", "/services/T0/B0/secret",
		"POST https://hooks.example.com/services/T0/B0/secret: 401 t0ken-xyz Ym90OnBhNTV3b3Jk api-key-123 t0ken%2Dxyz")
	f.Add("a", "", "", "", "", "aaaa")
	f.Add("**", "*", "", "", "", "****")
	f.Add("tok/en+?", "p w", "user", "x", "", "tok%2Fen+%3F tok%2Fen%2B%3F p%20w p+w")
	f.Add("", "", "", "Basic   c2VjcmV0", "", "Basic c2VjcmV0")
	f.Add("ab", "abab", "", "", "ba", "abababa")
	f.Fuzz(func(t *testing.T, token, password, user, header, extra, text string) {
		cfg := Config{Token: token, Password: password, BasicUsername: user, Headers: map[string]string{"Authorization": header}}
		s := NewScrubber(cfg, extra)
		for _, want := range []string{token, password, extra} {
			if want != "" && !slices.Contains(s.secrets, want) {
				t.Fatalf("the Scrubber does not hold the secret %q", want)
			}
		}
		if password != "" && !slices.Contains(s.secrets, base64.StdEncoding.EncodeToString([]byte(user+":"+password))) {
			t.Fatal("the Scrubber does not hold the basic-auth encoding of the password")
		}
		out := s.String(text)
		for _, secret := range s.secrets {
			if !strings.Contains(secret, "*") && strings.Contains(out, secret) {
				t.Fatalf("the secret %q is left in %q", secret, out)
			}
		}

		sentinel := errors.New("sentinel")
		err := s.Error(fmt.Errorf("%w: %s", sentinel, text))
		if !errors.Is(err, sentinel) || err.Error() != s.String(sentinel.Error()+": "+text) {
			t.Fatalf("Error gave %v, which lost the sentinel or is not the scrubbed text", err)
		}
		var se *StatusError
		err = s.Error(fmt.Errorf("posting: %w", &StatusError{Method: "POST", URL: text, Code: 401, Answer: text}))
		if !errors.As(err, &se) || se.URL != out || se.Answer != out || se.Code != 401 {
			t.Fatalf("Error gave %#v for a *StatusError", err)
		}
	})
}

// FuzzText builds a message from a fuzzed event (object, reason, text,
// revision and one more metadata key and value, severity) with a fuzzed
// folded count and resolution, and checks what every provider shows of
// it. It asserts that Text is the message with "Resolved: " before it
// exactly when it resolves and the folded line exactly when events were
// folded; that Fields are the metadata, sorted; that IsError is an error
// that resolves nothing; and that WireEvent is JSON of the event, with
// Text as its message.
func FuzzText(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, kind, name, namespace, reason, text, revision, key, value string, failed, resolves bool, folded uint8) {
		m := fuzzMessage(kind, name, namespace, reason, text, revision, key, value, failed, resolves, folded)
		got := Text(m)
		rest, cut := strings.CutPrefix(got, "Resolved: ")
		if cut != resolves {
			t.Fatalf("Text %q of a message that resolves: %v", got, resolves)
		}
		more := fmt.Sprintf("\n(and %d more like it)", folded)
		if folded > 0 {
			rest, cut = strings.CutSuffix(rest, more)
			if !cut {
				t.Fatalf("Text %q does not end with %q", got, more)
			}
		}
		if rest != text {
			t.Fatalf("Text %q does not hold the message %q", got, text)
		}
		if IsError(m) != (failed && !resolves) {
			t.Fatalf("IsError is %v for failed %v, resolves %v", IsError(m), failed, resolves)
		}

		fields := Fields(m)
		if len(fields) != len(m.Metadata) || !slices.IsSortedFunc(fields, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) }) {
			t.Fatalf("Fields %q are not the %d metadata, sorted", fields, len(m.Metadata))
		}
		for _, kv := range fields {
			if v, ok := m.Metadata[kv[0]]; !ok || v != kv[1] {
				t.Fatalf("Fields has %q, not in the metadata", kv)
			}
		}

		body, err := WireEvent(m)
		if err != nil {
			t.Fatalf("WireEvent: %v", err)
		}
		var e eventv1.Event
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("WireEvent is not JSON of an event: %v\n%s", err, body)
		}
		want := m.Event
		want.Message = got
		if len(want.Metadata) == 0 {
			want.Metadata = nil
		}
		if !e.Timestamp.Equal(&want.Timestamp) {
			t.Fatalf("WireEvent has the time %v, want %v", e.Timestamp, want.Timestamp)
		}
		e.Timestamp = want.Timestamp
		if fuzzValidUTF8(kind, name, namespace, reason, text, revision, key, value) && !reflect.DeepEqual(e, want) {
			t.Fatalf("WireEvent decodes to\n%+v\nwant\n%+v", e, want)
		}
	})
}

// fuzzSeeds adds the seeds of fuzz targets that take fuzzMessage's
// arguments.
func fuzzSeeds(f *testing.F) {
	f.Add("Kustomization", "webapp", "apps", "ReconciliationSucceeded", "Applied revision main@sha1:731f7ead",
		"main@sha1:731f7eaddfb6af01cb2173e18f0f75b0ba780ef1", "summary", "Cluster: prod", false, false, uint8(0))
	f.Add("HelmRelease", "podinfo", "flux-system", "UpgradeFailed", "Helm upgrade failed: timed out\nwaiting for the condition",
		"6.5.0", "helm.toolkit.fluxcd.io/token", "dedup-7f3a", true, false, uint8(41))
	f.Add("GitRepository", "repo", "default", "Resolved", "Fetched", "refs/heads/main@sha1:0123",
		"notification.toolkit.fluxcd.io/commit_status", "update", true, true, uint8(1))
	f.Add("", "", "", "", "", "", "", "", false, false, uint8(0))
	f.Add("Kind", "n", "ns", "Reason", "<b>bold</b> & `code` <!-- windlass:notification x -->",
		"é\xffü", "a/revision", "second revision", true, false, uint8(255))
	f.Add("Kind", strings.Repeat("n", 300), "ns", strings.Repeat("Ré", 200), strings.Repeat("ü", 30000),
		strings.Repeat("β", 300), strings.Repeat("k", 300), strings.Repeat("ü", 2000), true, false, uint8(3))
}

// fuzzMessage builds the message of the fuzz targets: an event about
// Kind/name.namespace at a fixed time, reported by kustomize-controller,
// whose metadata holds the revision (under a /revision key) and key:
// value, when they are not empty.
func fuzzMessage(kind, name, namespace, reason, text, revision, key, value string, failed, resolves bool, folded uint8) Message {
	m := Message{Event: eventv1.Event{
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

// fuzzValidUTF8 tells whether every string is valid UTF-8: JSON can only
// carry those unchanged.
func fuzzValidUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
