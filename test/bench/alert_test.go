package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
)

// postEvent posts an event about kind/name to url as a generic provider
// does, and returns the status code.
func postEvent(g Gomega, url, kind, name, severity, reason, message string) int {
	body, err := json.Marshal(eventv1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "bench-x", Name: name},
		Severity:       severity, Reason: reason, Message: message, ReportingController: "kustomize-controller",
	})
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	return resp.StatusCode
}

// TestNotificationSink posts what the generic provider posts, a failure, a
// folded flood, a resolved failure and an info event, and checks what the
// sink counts, by mark.
func TestNotificationSink(t *testing.T) {
	g := NewWithT(t)
	s, err := startNotificationSink()
	g.Expect(err).NotTo(HaveOccurred())
	defer s.Close()
	g.Expect(s.URL).To(HavePrefix("http://127.0.0.1:"))

	g.Expect(postEvent(g, s.URL, "GitRepository", "monorepo", "info", "NewArtifact", "stored artifact")).To(Equal(http.StatusOK))
	mark := s.Len()
	g.Expect(postEvent(g, s.URL, "Kustomization", "app-1", "error", "BuildFailed", "kustomize build failed")).To(Equal(http.StatusOK))
	g.Expect(postEvent(g, s.URL, "Kustomization", "app-9", "error", "BuildFailed", "kustomize build failed\n(and 996 more like it)")).To(Equal(http.StatusOK))
	g.Expect(postEvent(g, s.URL, "Kustomization", "app-1", "info", "ReconciliationSucceeded", "Resolved: Applied revision")).To(Equal(http.StatusOK))
	g.Expect(postEvent(g, s.URL, "Kustomization", "app-2", "info", "ReconciliationSucceeded", "Applied revision")).To(Equal(http.StatusOK))

	// What is not an event is refused, and not counted.
	resp, err := http.Post(s.URL, "application/json", strings.NewReader(`{"message":"no object"}`))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
	resp, err = http.Get(s.URL)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
	g.Expect(s.Refused()).To(Equal(1))

	g.Expect(s.Len()).To(Equal(5))
	c, byWhat := tally(s.Since(mark))
	g.Expect(c).To(Equal(NotificationCounts{Messages: 4, Errors: 2, Info: 1, Resolved: 1, Folded: 996}))
	g.Expect(byWhat).To(Equal([]string{"Kustomization BuildFailed=2(+996 folded)", "resolved Kustomization ReconciliationSucceeded=1"}))
	all, byWhat := tally(s.Between(0, mark))
	g.Expect(all).To(Equal(NotificationCounts{Messages: 1, Info: 1}))
	g.Expect(byWhat).To(BeEmpty())
	g.Expect(s.Between(3, 100)).To(HaveLen(2))
	g.Expect(s.Between(9, 100)).To(BeEmpty())
}

func TestParseNotification(t *testing.T) {
	g := NewWithT(t)
	at := time.Unix(1, 0)
	n, err := parseNotification([]byte(`{"involvedObject":{"kind":"Kustomization","name":"app-3"},"severity":"error","reason":"BuildFailed",`+
		`"message":"Resolved: x\n(and 12 more like it)"}`), at)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(notification{At: at, Kind: "Kustomization", Name: "app-3", Severity: "error", Reason: "BuildFailed", Resolved: true, Folded: 12}))
	// The count must end the message.
	n, err = parseNotification([]byte(`{"involvedObject":{"kind":"Bucket"},"severity":"info","message":"(and 3 more like it) later"}`), at)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Folded).To(BeZero())
	_, err = parseNotification([]byte(`not json`), at)
	g.Expect(err).To(HaveOccurred())
	_, err = parseNotification([]byte(`{"severity":"info"}`), at)
	g.Expect(err).To(MatchError(ContainSubstring("names no object kind")))
}

func TestEventSources(t *testing.T) {
	g := NewWithT(t)
	g.Expect(alertKinds(Config{Kind: KindKustomization}, "Bucket")).To(Equal([]string{"Bucket", "Kustomization"}))
	kinds := alertKinds(Config{Kind: KindHelmRelease}, "HelmRepository")
	g.Expect(kinds).To(Equal([]string{"HelmRepository", "HelmChart", "HelmRelease"}))
	es := eventSources(kinds, "bench-1", []string{"bench-1", "bench-1-app-0"})
	g.Expect(es).To(Equal([]notificationv1beta3.EventSource{
		{Kind: "HelmRepository", Name: "*", Namespace: "bench-1"},
		{Kind: "HelmChart", Name: "*", Namespace: "bench-1"},
		{Kind: "HelmRelease", Name: "*", Namespace: "bench-1"},
		{Kind: "HelmRelease", Name: "*", Namespace: "bench-1-app-0"},
	}))
}

func TestAlertRows(t *testing.T) {
	g := NewWithT(t)
	ready := 100
	rows := alertRows(&AlertResult{
		WindowSeconds: 300, EventSources: 2,
		Phases: map[string]NotificationCounts{phaseReady: {Messages: 101, Info: 101}},
		BrokenRevision: &FailureResult{What: "a broken commit", Failed: 100, FailedSeconds: 2, RecoveredSeconds: 3,
			Failure: NotificationCounts{Messages: 4, Errors: 3, Info: 1}, Recovery: NotificationCounts{Messages: 100, Info: 97, Resolved: 3}},
		FetchFailure:  &FailureResult{What: "a deleted branch", Failed: 1, KustomizationsReady: &ready},
		AfterRecovery: &NotificationCounts{Messages: 1, Errors: 1, Folded: 96},
		Total:         NotificationCounts{Messages: 206},
		ByWhat:        map[string][]string{"broken_revision/failure": {"Kustomization BuildFailed=3"}},
		LateSeconds:   280,
	})
	g.Expect(rows[0]).To(Equal([2]string{"alert", "206 messages: 0 errors, 0 info, 0 resolved, 0 events folded (window 5m0s, 2 event sources, 0 refused)"}))
	g.Expect(rows[1]).To(Equal([2]string{"  ready", "101 messages: 0 errors, 101 info, 0 resolved, 0 events folded; none"}))
	g.Expect(rows[2][1]).To(Equal("a deleted branch: 1 failed in 0.00s (0 with a Warning event), Ready again in 0.00s (100 Kustomizations stayed Ready)"))
	g.Expect(rows[5][1]).To(Equal("a broken commit: 100 failed in 2.00s (0 with a Warning event), Ready again in 3.00s"))
	g.Expect(rows[6][1]).To(Equal("4 messages: 3 errors, 1 info, 0 resolved, 0 events folded; Kustomization BuildFailed=3"))
	g.Expect(rows[8]).To(Equal([2]string{"  after recovery", "1 messages: 1 errors, 0 info, 0 resolved, 96 events folded in 280s; none"}))
}

// smokeAlertWindow is the dispatcher's window in the smoke test's -alert
// run: short, for the run waits for it to close.
const smokeAlertWindow = 20 * time.Second

// smokeAlert runs the benchmark with -alert, smokeN applications in one
// repository, on cl, and checks that the sink hears the run, that the
// failure phase fails and mends every object, and that the flood of the
// broken revision is folded: a handful of error messages, not one per
// Kustomization, a resolved message for each failure sent, and no failure
// message once every Kustomization recovered.
func smokeAlert(t *testing.T, cl *Cluster) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run(ctx, cl, Config{N: smokeN, Layout: LayoutMonorepo, Alert: true, AlertWindow: smokeAlertWindow,
		ReadyTimeout: 90 * time.Second, Log: t.Output(), Cleanup: true})
	g.Expect(err).NotTo(HaveOccurred())
	printTable(t.Output(), res)

	a := res.Alert
	g.Expect(a).NotTo(BeNil())
	g.Expect(a.Refused).To(BeZero())
	g.Expect(a.EventSources).To(Equal(2))
	g.Expect(a.WindowSeconds).To(Equal(smokeAlertWindow.Seconds()))
	g.Expect(a.Phases).To(HaveKeyWithValue(phaseReady, HaveField("Info", BeNumerically(">=", smokeN))), "an event per application applied")
	g.Expect(res.NoopTickWrites).To(BeZero())

	fetch := a.FetchFailure
	g.Expect(fetch).NotTo(BeNil())
	g.Expect(fetch.Failed).To(Equal(1))
	g.Expect(*fetch.KustomizationsReady).To(Equal(smokeN), "the Kustomizations keep the last artifact")
	g.Expect(fetch.Failure.Errors).To(Equal(1), "one source, one failure: %v", a.ByWhat)
	g.Expect(fetch.Recovery.Resolved).To(Equal(1), "%v", a.ByWhat)

	broken := a.BrokenRevision
	g.Expect(broken).NotTo(BeNil())
	g.Expect(broken.Failed).To(Equal(smokeN))
	g.Expect(broken.Warned).To(Equal(smokeN), "every Kustomization recorded its failure")
	g.Expect(broken.Failure.Errors).To(BeNumerically("<", smokeN/2), "the flood is folded: %v", a.ByWhat)
	g.Expect(broken.Failure.Errors).To(BeNumerically(">", 0))
	g.Expect(broken.Recovery.Resolved).To(Equal(broken.Failure.Errors), "each failure sent is resolved: %v", a.ByWhat)
	// The held failures recovered within the window: no message reports
	// a failure that is over.
	g.Expect(a.AfterRecovery).NotTo(BeNil())
	g.Expect(a.AfterRecovery.Errors+broken.Recovery.Errors).To(BeZero(), "%v", a.ByWhat)

	data, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	var got map[string]any
	g.Expect(json.Unmarshal(data, &got)).To(Succeed())
	g.Expect(got).To(HaveKeyWithValue("alert", And(HaveKey("phases"), HaveKey("fetch_failure"), HaveKey("broken_revision"),
		HaveKey("after_recovery"), HaveKey("total"), HaveLen(7))))
}
