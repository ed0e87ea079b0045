package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	notifyctrl "github.com/windlass-dev/windlass/internal/controller/notification"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
)

// alertName names the Provider and the Alert of an -alert run.
const alertName = "bench"

// The phases whose notifications an -alert run counts apart (see
// AlertResult.Phases).
const (
	phaseReady  = "ready"
	phaseChange = "change"
	phaseNoop   = "noop_tick"
)

// AlertResult holds the figures of an -alert run: the messages the
// Provider's service received, by phase.
type AlertResult struct {
	// WindowSeconds is the dispatcher's deduplication and folding window
	// (the controller's --rate-limit-interval).
	WindowSeconds float64 `json:"window_seconds"`
	// EventSources is the number of event sources of the Alert.
	EventSources int `json:"event_sources"`
	// Phases counts the messages received in the ready phase, the change
	// and the no-op tick (until the failure phase begins).
	Phases map[string]NotificationCounts `json:"phases"`
	// FetchFailure and BrokenRevision are the two steps of the failure
	// phase (git sources only; nil otherwise).
	FetchFailure   *FailureResult `json:"fetch_failure,omitempty"`
	BrokenRevision *FailureResult `json:"broken_revision,omitempty"`
	// AfterRecovery counts the messages received after the last recovery,
	// until the folding window of the broken revision's failures closed
	// (the folded flood's message comes then).
	AfterRecovery *NotificationCounts `json:"after_recovery,omitempty"`
	// Total counts every message of the run.
	Total NotificationCounts `json:"total"`

	// Refused counts the requests the sink refused: not events. It must
	// be 0.
	Refused int `json:"-"`
	// ByWhat lists the error and resolved messages of each part of the
	// run by kind and reason (see tally).
	ByWhat map[string][]string `json:"-"`
	// LateSeconds is how long the run waited, after the last recovery, for
	// the folding window to close.
	LateSeconds float64 `json:"-"`
}

// FailureResult holds the figures of one step of the failure phase: a
// failure of the sources, then its fix.
type FailureResult struct {
	// What says what failed.
	What string `json:"what"`
	// Failed is the number of objects that reported the failure: the
	// sources, or the Kustomizations.
	Failed int `json:"failed"`
	// Warned is the number of objects with a Warning event (a Kubernetes
	// event) recorded from the break until every object reported the
	// failure: the failures the controller handed to the dispatcher.
	Warned int `json:"objects_warned"`
	// FailedSeconds runs from the break until every one reported it.
	FailedSeconds float64 `json:"failed_seconds"`
	// RecoveredSeconds runs from the fix until every one was Ready again.
	RecoveredSeconds float64 `json:"recovered_seconds"`
	// KustomizationsReady counts the Kustomizations still Ready once every
	// source reported the failure (they keep the last artifact).
	KustomizationsReady *int `json:"kustomizations_ready_while_failing,omitempty"`
	// Failure counts the messages received from the break until the fix,
	// and Recovery from the fix until the messages stopped coming once
	// every object was Ready.
	Failure  NotificationCounts `json:"failure_notifications"`
	Recovery NotificationCounts `json:"recovery_notifications"`
}

// alertKit is the Provider's service of an -alert run and the marks of
// the phases in what it received.
type alertKit struct {
	sink   *notificationSink
	window time.Duration
	// marks are where each phase began, in order.
	marks []alertMark
	// sources is the number of event sources of the Alert.
	sources int
}

// alertMark is the number of notifications received when a phase began.
type alertMark struct {
	phase string
	at    int
}

// mark records that phase begins; a nil kit records nothing.
func (a *alertKit) mark(phase string) {
	if a != nil {
		a.marks = append(a.marks, alertMark{phase: phase, at: a.sink.Len()})
	}
}

// phases counts the notifications from each mark to the next, or to end.
func (a *alertKit) phases(end int, res *AlertResult) {
	for i, m := range a.marks {
		to := end
		if i+1 < len(a.marks) {
			to = a.marks[i+1].at
		}
		res.Phases[m.phase], res.ByWhat[m.phase] = tally(a.sink.Between(m.at, to))
	}
}

// Close stops the sink.
func (a *alertKit) Close() {
	if a != nil {
		a.sink.Close()
	}
}

// alertKinds returns the kinds of the objects a run creates whose events
// an Alert can select: the sources and the applications' objects.
func alertKinds(cfg Config, sourceKind string) []string {
	if cfg.Kind == KindHelmRelease {
		return []string{sourcev1.HelmRepositoryKind, sourcev1.HelmChartKind, helmv2.HelmReleaseKind}
	}
	return []string{sourceKind, kustomizev1.KustomizationKind}
}

// eventSources returns the Alert's event sources: every object (name '*')
// of every kind of kinds in namespace ns, and of the last of them in each
// of appNamespaces too.
func eventSources(kinds []string, ns string, appNamespaces []string) []notificationv1beta3.EventSource {
	var out []notificationv1beta3.EventSource
	for _, k := range kinds {
		out = append(out, notificationv1beta3.EventSource{Kind: k, Name: notificationv1beta3.WildcardName, Namespace: ns})
	}
	for _, n := range appNamespaces {
		if n != ns {
			out = append(out, notificationv1beta3.EventSource{Kind: kinds[len(kinds)-1], Name: notificationv1beta3.WildcardName, Namespace: n})
		}
	}
	return out
}

// startAlerts starts the sink and creates, in the run's namespace, the
// Alert (severity info, every object of the run) and then its generic
// Provider, pointing at the sink. It waits until the controller reports
// the Alert without its Provider, then forwarding events once it exists:
// from then on, every event of the run reaches the sink.
func (r *run) startAlerts(ctx context.Context) (err error) {
	a := &alertKit{window: r.cfg.AlertWindow}
	if a.sink, err = startNotificationSink(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var appNamespaces []string
	if r.cfg.Kind == KindHelmRelease {
		for i := range r.cfg.N {
			appNamespaces = append(appNamespaces, r.appNamespace(i))
		}
	}
	alert := &notificationv1beta3.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: alertName},
		Spec: notificationv1beta3.AlertSpec{
			ProviderRef:   meta.LocalObjectReference{Name: alertName},
			EventSources:  eventSources(alertKinds(r.cfg, r.kit.Kind()), r.ns, appNamespaces),
			EventSeverity: notificationv1beta3.EventSeverityInfo,
		},
	}
	a.sources = len(alert.Spec.EventSources)
	if err := r.c.Create(ctx, alert); err != nil {
		return fmt.Errorf("creating the Alert: %w", err)
	}
	if err := r.waitAlertEvent(ctx, notifyctrl.ProviderNotFoundReason); err != nil {
		return err
	}
	provider := &notificationv1beta3.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: alertName},
		Spec:       notificationv1beta3.ProviderSpec{Type: "generic", Address: a.sink.URL},
	}
	if err := r.c.Create(ctx, provider); err != nil {
		return fmt.Errorf("creating the Provider: %w", err)
	}
	if err := r.waitAlertEvent(ctx, notifyctrl.ReadyReason); err != nil {
		return err
	}
	r.alerts = a
	r.logf("alert %s forwards the events of %d event sources to %s", alertName, a.sources, a.sink.URL)
	return nil
}

// waitAlertEvent waits until the Alert has an event with reason.
func (r *run) waitAlertEvent(ctx context.Context, reason string) error {
	for {
		var list corev1.EventList
		err := r.c.List(ctx, &list, client.InNamespace(r.ns), client.MatchingFields{
			"involvedObject.kind": notificationv1beta3.AlertKind, "involvedObject.name": alertName, "reason": reason})
		if err != nil {
			return fmt.Errorf("listing the events of the Alert: %w", err)
		}
		if len(list.Items) > 0 {
			return nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return r.withOutput(fmt.Errorf("waiting for an event %s on the Alert: %w", reason, err))
		}
	}
}

// deleteAlerts deletes the Alert and the Provider of the run.
func deleteAlerts(ctx context.Context, c client.Client, ns string) error {
	for _, obj := range []client.Object{&notificationv1beta3.Alert{}, &notificationv1beta3.Provider{}} {
		obj.SetNamespace(ns)
		obj.SetName(alertName)
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// alertPhase runs the failure phase when the run can (Kustomizations
// from git), then counts what the sink received in every phase.
func (r *run) alertPhase(ctx context.Context, res *Result) error {
	a := r.alerts
	ar := &AlertResult{WindowSeconds: a.window.Seconds(), EventSources: a.sources,
		Phases: map[string]NotificationCounts{}, ByWhat: map[string][]string{}}
	res.Alert = ar
	failStart := a.sink.Len()
	if kit, ok := r.kit.(*gitKit); ok && r.cfg.Kind == KindKustomization {
		if err := r.failurePhase(ctx, kit, ar); err != nil {
			return err
		}
	} else {
		r.logf("no failure phase: it breaks git sources of Kustomizations")
	}
	a.phases(failStart, ar)
	ar.Total, ar.ByWhat["total"] = tally(a.sink.Since(0))
	ar.Refused = a.sink.Refused()
	return nil
}

// alertRows returns the table rows of an -alert run.
func alertRows(a *AlertResult) [][2]string {
	counts := func(c NotificationCounts) string {
		return fmt.Sprintf("%d messages: %d errors, %d info, %d resolved, %d events folded", c.Messages, c.Errors, c.Info, c.Resolved, c.Folded)
	}
	detail := func(key string) string {
		return orNone(strings.Join(a.ByWhat[key], " "))
	}
	rows := [][2]string{{"alert", fmt.Sprintf("%s (window %s, %d event sources, %d refused)",
		counts(a.Total), time.Duration(a.WindowSeconds*float64(time.Second)), a.EventSources, a.Refused)}}
	for _, p := range []string{phaseReady, phaseChange, phaseNoop} {
		if c, ok := a.Phases[p]; ok {
			rows = append(rows, [2]string{"  " + p, counts(c) + "; " + detail(p)})
		}
	}
	for _, f := range []struct {
		key string
		r   *FailureResult
	}{{"fetch_failure", a.FetchFailure}, {"broken_revision", a.BrokenRevision}} {
		if f.r == nil {
			continue
		}
		head := fmt.Sprintf("%s: %d failed in %.2fs (%d with a Warning event), Ready again in %.2fs", f.r.What, f.r.Failed, f.r.FailedSeconds,
			f.r.Warned, f.r.RecoveredSeconds)
		if f.r.KustomizationsReady != nil {
			head += fmt.Sprintf(" (%d Kustomizations stayed Ready)", *f.r.KustomizationsReady)
		}
		rows = append(rows, [2]string{"  " + f.key, head},
			[2]string{"    failure", counts(f.r.Failure) + "; " + detail(f.key+"/failure")},
			[2]string{"    recovery", counts(f.r.Recovery) + "; " + detail(f.key+"/recovery")})
	}
	if c := a.AfterRecovery; c != nil {
		rows = append(rows, [2]string{"  after recovery", fmt.Sprintf("%s in %.0fs; %s", counts(*c), a.LateSeconds, detail("after_recovery"))})
	}
	return rows
}

// defaultAlertWindow is the window of the controller's dispatcher when
// -alert-window is not given.
const defaultAlertWindow = dispatch.DefaultWindow

// alertFlushSlack is how long after a folding window ends its message
// may come: the dispatcher closes windows every
// dispatch.DefaultFlushInterval, and the post takes a moment.
const alertFlushSlack = dispatch.DefaultFlushInterval + 5*time.Second
