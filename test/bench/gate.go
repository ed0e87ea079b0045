package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// gateName names the one Gate of a -gate run; every Kustomization lists it
// in spec.gates.
const gateName = "bench"

// defaultGateQuiet is the length of the held phase's quiet window when
// Config.GateQuiet is zero.
const defaultGateQuiet = 10 * time.Second

// settleBound bounds the wait, before the quiet window, for the
// controller's request count to stand still.
const settleBound = 15 * time.Second

// GateResult holds the figures of a -gate run.
type GateResult struct {
	// Held is the number of Kustomizations that reported Approved=False,
	// reason GateClosed, at the end of the quiet window, just before the
	// gate was opened: N when every one waited.
	Held int `json:"held"`
	// HeldSeconds runs from the creation of the first source until
	// every source had an artifact and every Kustomization reported
	// Approved=False, reason GateClosed.
	HeldSeconds float64 `json:"held_seconds"`
	// AppliedWhileHeld counts the applications' objects (ServiceAccounts,
	// ConfigMaps, Services, Deployments named after them) found in the
	// namespace while the gate was closed, when every Kustomization was
	// held and again after the quiet window (the larger count). It must be
	// 0: the run fails otherwise.
	AppliedWhileHeld int `json:"applied_while_held"`
	// QuietSeconds is the length of the quiet window: every Kustomization
	// held, nothing changing.
	QuietSeconds float64 `json:"held_quiet_seconds"`
	// HeldAPIRequests is the increase of the controller's
	// rest_client_requests_total over the quiet window.
	HeldAPIRequests int64 `json:"held_api_requests"`
	// HeldAPIRequestsPerSecond is HeldAPIRequests over QuietSeconds: what
	// holding N applications costs the API server. It should be near zero
	// and not grow with N.
	HeldAPIRequestsPerSecond float64 `json:"held_api_requests_per_second"`
	// OpenToReadySeconds runs from just before the patch that opens the
	// gate (the open.gate.fluxcd.io/requestedAt annotation) until every
	// Kustomization is Ready with its source's head applied.
	OpenToReadySeconds float64 `json:"open_to_ready_seconds"`
	// OpenToReady are quantiles of the times, from the same request, at
	// which the Kustomizations were Ready with their source's head.
	OpenToReady Quantiles `json:"open_to_ready_quantiles"`

	// GateOpenedSeconds runs from the open request until the Gate
	// reported Opened=True (the gating controller's share of
	// OpenToReadySeconds).
	GateOpenedSeconds float64 `json:"-"`
	// SettleSeconds is the wait, once every Kustomization was held, until
	// the controller's request count stood still for a second (the
	// requests that follow the creation: status updates, events), before
	// the quiet window.
	SettleSeconds float64 `json:"-"`
	// HeldAPIRequestsByMethod splits HeldAPIRequests by HTTP method.
	HeldAPIRequestsByMethod map[string]int64 `json:"-"`
	// AppliedAfterOpen counts the same objects once every Kustomization
	// is Ready: four per application, the proof that the count of
	// AppliedWhileHeld sees them.
	AppliedAfterOpen int `json:"-"`
	// HeldServerRequests are the requests the API server served during
	// the quiet window, every client's (kube-controller-manager's too),
	// largest count first.
	HeldServerRequests []string `json:"-"`
}

// Quantiles are the 10%, 50%, 90% and 99% quantiles of a set of times, in
// seconds.
type Quantiles struct {
	P10 float64 `json:"p10"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// quantilesOf converts the four values firstTimes.quantiles returns.
func quantilesOf(q []float64) Quantiles {
	if len(q) != 4 {
		return Quantiles{}
	}
	return Quantiles{P10: q[0], P50: q[1], P90: q[2], P99: q[3]}
}

// benchGate is the Gate of a -gate run in namespace ns: closed by
// default, and a request lasts an hour, longer than the run.
func benchGate(ns string) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gateName},
		Spec: gatingv1alpha1.GateSpec{
			Default: gatingv1alpha1.GateClosed,
			Window:  &metav1.Duration{Duration: time.Hour},
		},
	}
}

// gatedRun is the ready phase of a -gate run:
//
//  1. the Gate is created, closed, and the run waits until the gating
//     controller says so (not measured);
//  2. the sources and Kustomizations are created; the run waits
//     until every source has an artifact and every Kustomization
//     reports Approved=False, reason GateClosed, and counts the
//     applications' objects, which must not exist;
//  3. once the controller's request count stands still, it counts the
//     controller's API requests over a quiet window, then counts the
//     objects and the held Kustomizations again;
//  4. it opens the gate with open.gate.fluxcd.io/requestedAt=<now> and
//     waits until every Kustomization is Ready with its source's head.
type gatedRun struct {
	c       client.WithWatch
	ns      string
	n       int
	ctrl    *controller
	restCfg *rest.Config
	// sourceList is an empty list of the sources' kind.
	sourceList client.ObjectList
	// quiet is the length of the quiet window (defaultGateQuiet when 0).
	quiet time.Duration
	logf  func(string, ...any)
}

// run runs the phase. The timeline's sources count from the creation of
// the first object; its Kustomizations and seconds from the opening.
func (g *gatedRun) run(ctx context.Context, sources, kss []client.Object, heads map[string]string) (timeline, *GateResult, error) {
	res := &GateResult{}
	if err := g.createGate(ctx); err != nil {
		return timeline{}, nil, err
	}
	sourceQ, err := g.hold(ctx, sources, kss, res)
	if err != nil {
		return timeline{}, nil, err
	}
	if err := g.checkNothingApplied(ctx, res, "once every Kustomization was held"); err != nil {
		return timeline{}, nil, err
	}
	if err := g.measureQuiet(ctx, res); err != nil {
		return timeline{}, nil, err
	}
	if err := g.checkNothingApplied(ctx, res, "after the quiet window"); err != nil {
		return timeline{}, nil, err
	}
	if res.Held, err = g.countHeld(ctx); err != nil {
		return timeline{}, nil, err
	}
	if res.Held != g.n {
		return timeline{}, nil, fmt.Errorf("after the quiet window %d of %d Kustomizations are held by the gate", res.Held, g.n)
	}
	tl, err := g.open(ctx, heads, res)
	if err != nil {
		return timeline{}, nil, err
	}
	tl.source = sourceQ
	return tl, res, nil
}

// createGate creates the closed Gate and waits until the gating controller
// reports it closed.
func (g *gatedRun) createGate(ctx context.Context) error {
	if err := g.c.Create(ctx, benchGate(g.ns)); err != nil {
		return fmt.Errorf("creating the gate: %w", err)
	}
	if err := waitAll(ctx, g.c, g.ns, &gatingv1alpha1.GateList{}, 1, gateDecidedClosed, describeGate); err != nil {
		return fmt.Errorf("waiting for the gating controller to report the gate closed: %w", err)
	}
	return nil
}

// hold creates the sources and the Kustomizations and waits until every
// source has an artifact and every Kustomization is held. It returns the
// quantiles of the sources' first artifact, counted from the first
// creation.
func (g *gatedRun) hold(ctx context.Context, sources, kss []client.Object, res *GateResult) ([]float64, error) {
	start := time.Now()
	sourceAt := firstTimes{start: start}
	sourced, held, applied := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	// A Kustomization that applies behind the closed gate ends the wait at
	// once, rather than after the timeout.
	appliedCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		applied <- waitAll(appliedCtx, g.c, g.ns, &kustomizev1.KustomizationList{}, 1, hasApplied, describeHeld)
	}()
	go func() {
		sourced <- waitAll(ctx, g.c, g.ns, g.sourceList, len(sources), sourceAt.record(hasArtifact), describeSource)
	}()
	go func() {
		held <- waitAll(ctx, g.c, g.ns, &kustomizev1.KustomizationList{}, g.n, ksHeld, describeHeld)
	}()
	all := append(append([]client.Object{}, sources...), kss...)
	if err := parallel(ctx, len(all), workers, func(i int) error {
		return g.c.Create(ctx, all[i].DeepCopyObject().(client.Object))
	}); err != nil {
		return nil, fmt.Errorf("creating the objects: %w", err)
	}
	g.logf("created %d objects behind gate %s in %.1fs", len(all), gateName, time.Since(start).Seconds())
	select {
	case err := <-held:
		if err != nil {
			return nil, fmt.Errorf("waiting for every Kustomization to report Approved=False (%s): %w", meta.GateClosedReason, err)
		}
	case err := <-applied:
		if err == nil {
			return nil, errors.New("a Kustomization applied a revision behind the closed gate: the gate does not hold its consumers")
		}
		return nil, fmt.Errorf("watching for Kustomizations applied behind the closed gate: %w", err)
	}
	if err := <-sourced; err != nil {
		return nil, fmt.Errorf("waiting for every source to have an artifact: %w", err)
	}
	res.HeldSeconds = time.Since(start).Seconds()
	g.logf("all %d held and %d sources fetched in %.2fs", g.n, len(sources), res.HeldSeconds)
	return sourceAt.quantiles(), nil
}

// checkNothingApplied counts the applications' objects into
// res.AppliedWhileHeld (the largest count so far) and fails when there is
// one; when says when it was counted.
func (g *gatedRun) checkNothingApplied(ctx context.Context, res *GateResult, when string) error {
	n, err := countAppObjects(ctx, g.c, g.ns, g.n)
	if err != nil {
		return err
	}
	res.AppliedWhileHeld = max(res.AppliedWhileHeld, n)
	if n > 0 {
		return fmt.Errorf("%d objects of the applications exist %s, while the gate is closed: a Kustomization applied behind a closed gate", n, when)
	}
	return nil
}

// measureQuiet waits until the controller's request count stands still,
// then counts its requests over the quiet window.
func (g *gatedRun) measureQuiet(ctx context.Context, res *GateResult) error {
	settled, err := g.ctrl.waitRequestsStill(ctx, settleBound)
	if err != nil {
		return err
	}
	res.SettleSeconds = settled.Seconds()
	quiet := g.quiet
	if quiet <= 0 {
		quiet = defaultGateQuiet
	}
	total0, byMethod0, err := g.ctrl.apiRequests()
	if err != nil {
		return err
	}
	served0 := serverRequestsOrNil(ctx, g.restCfg)
	start := time.Now()
	if err := sleep(ctx, quiet); err != nil {
		return err
	}
	total1, byMethod1, err := g.ctrl.apiRequests()
	if err != nil {
		return err
	}
	res.QuietSeconds = time.Since(start).Seconds()
	res.HeldServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, g.restCfg))
	res.HeldAPIRequests = total1 - total0
	res.HeldAPIRequestsPerSecond = float64(res.HeldAPIRequests) / res.QuietSeconds
	res.HeldAPIRequestsByMethod = map[string]int64{}
	for m, v := range byMethod1 {
		if d := v - byMethod0[m]; d != 0 {
			res.HeldAPIRequestsByMethod[m] = d
		}
	}
	g.logf("held for %.1fs (after %.1fs settling): %d API requests, %.2f/s", res.QuietSeconds, res.SettleSeconds,
		res.HeldAPIRequests, res.HeldAPIRequestsPerSecond)
	return nil
}

// open opens the gate and waits until every Kustomization is Ready with
// its source's head, recording the timeline from the request.
func (g *gatedRun) open(ctx context.Context, heads map[string]string, res *GateResult) (timeline, error) {
	start := time.Now()
	appliedAt, readyAt := firstTimes{start: start}, firstTimes{start: start}
	atHead := func(obj client.Object) bool {
		k := obj.(*kustomizev1.Kustomization)
		return appliedRevision(heads[k.Spec.SourceRef.Name])(k)
	}
	done := func(obj client.Object) bool {
		appliedAt.record(hasApplied)(obj)
		return readyAt.record(atHead)(obj)
	}
	ready, opened := make(chan error, 1), make(chan time.Duration, 1)
	go func() {
		ready <- waitAll(ctx, g.c, g.ns, &kustomizev1.KustomizationList{}, g.n, done, describeKs)
	}()
	go func() {
		if waitAll(ctx, g.c, g.ns, &gatingv1alpha1.GateList{}, 1, gateOpened, describeGate) == nil {
			opened <- time.Since(start)
		}
	}()
	at := time.Now().UTC().Format(time.RFC3339)
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+gatingv1alpha1.OpenRequestAnnotation+`":"`+at+`"}}}`))
	if err := g.c.Patch(ctx, &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: g.ns, Name: gateName}}, patch); err != nil {
		return timeline{}, fmt.Errorf("opening the gate: %w", err)
	}
	err := <-ready
	if err != nil {
		return timeline{}, fmt.Errorf("waiting, after opening the gate, for every Kustomization to be Ready at its revision: %w", err)
	}
	tl := timeline{seconds: time.Since(start).Seconds(), applied: appliedAt.quantiles(), ready: readyAt.quantiles()}
	res.OpenToReadySeconds = tl.seconds
	res.OpenToReady = quantilesOf(tl.ready)
	if res.AppliedAfterOpen, err = countAppObjects(ctx, g.c, g.ns, g.n); err != nil {
		return timeline{}, err
	}
	if want := appObjects * g.n; res.AppliedAfterOpen != want {
		return timeline{}, fmt.Errorf("%d objects of the applications exist once every Kustomization is Ready, not %d: the count of the objects applied while held cannot be trusted", res.AppliedAfterOpen, want)
	}
	select {
	case d := <-opened:
		res.GateOpenedSeconds = d.Seconds()
	case <-time.After(5 * time.Second):
		g.logf("did not see the gate report Opened=True")
	}
	g.logf("gate opened after %.2fs; all %d Ready %.2fs after the request", res.GateOpenedSeconds, g.n, res.OpenToReadySeconds)
	return tl, nil
}

// countHeld counts the Kustomizations held by a closed gate.
func (g *gatedRun) countHeld(ctx context.Context) (int, error) {
	var list kustomizev1.KustomizationList
	if err := g.c.List(ctx, &list, client.InNamespace(g.ns)); err != nil {
		return 0, fmt.Errorf("listing the Kustomizations: %w", err)
	}
	n := 0
	for i := range list.Items {
		if ksHeld(&list.Items[i]) {
			n++
		}
	}
	return n, nil
}

// appObjects is the number of objects of one application that
// countAppObjects counts (see appManifests).
const appObjects = 4

// countAppObjects counts the objects of applications 0 … n-1 in namespace
// ns: the ServiceAccounts, ConfigMaps, Services and Deployments named
// after them.
func countAppObjects(ctx context.Context, c client.Client, ns string, n int) (int, error) {
	names := map[string]bool{}
	for i := range n {
		names[appName(i)] = true
	}
	count := 0
	for _, list := range []client.ObjectList{&corev1.ServiceAccountList{}, &corev1.ConfigMapList{},
		&corev1.ServiceList{}, &appsv1.DeploymentList{}} {
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return 0, fmt.Errorf("counting the applications' objects: %w", err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return 0, err
		}
		for _, item := range items {
			if names[item.(client.Object).GetName()] {
				count++
			}
		}
	}
	return count, nil
}

// ksHeld reports whether a Kustomization reports Approved=False, reason
// GateClosed.
func ksHeld(obj client.Object) bool {
	k := obj.(*kustomizev1.Kustomization)
	c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ApprovedCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == meta.GateClosedReason
}

// describeHeld summarises a Kustomization's Approved and Ready conditions.
func describeHeld(obj client.Object) string {
	k := obj.(*kustomizev1.Kustomization)
	s := "no Approved condition"
	if c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ApprovedCondition); c != nil {
		s = fmt.Sprintf("Approved=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return s + "; " + describeKs(obj)
}

// gateDecidedClosed reports whether a Gate's Opened condition is False.
func gateDecidedClosed(obj client.Object) bool {
	c := apimeta.FindStatusCondition(obj.(*gatingv1alpha1.Gate).Status.Conditions, gatingv1alpha1.OpenedCondition)
	return c != nil && c.Status == metav1.ConditionFalse
}

// gateOpened reports whether a Gate's Opened condition is True.
func gateOpened(obj client.Object) bool { return obj.(*gatingv1alpha1.Gate).IsOpened() }

// describeGate summarises a Gate's Opened condition.
func describeGate(obj client.Object) string {
	c := apimeta.FindStatusCondition(obj.(*gatingv1alpha1.Gate).Status.Conditions, gatingv1alpha1.OpenedCondition)
	if c == nil {
		return "no Opened condition"
	}
	return fmt.Sprintf("Opened=%s %s: %s", c.Status, c.Reason, c.Message)
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// gateRows returns the table rows of a -gate run: the summary line the
// benchmark issue asks for, then the details.
func gateRows(r *GateResult) [][2]string {
	q := r.OpenToReady
	var reqs []string
	for _, m := range slices.Sorted(maps.Keys(r.HeldAPIRequestsByMethod)) {
		reqs = append(reqs, fmt.Sprintf("%s=%d", m, r.HeldAPIRequestsByMethod[m]))
	}
	return [][2]string{
		{"gate", fmt.Sprintf("held %d in %.2fs, opened → all Ready in %.2fs (p10 %.2fs p50 %.2fs p90 %.2fs p99 %.2fs), held-phase API requests/s %.2f",
			r.Held, r.HeldSeconds, r.OpenToReadySeconds, q.P10, q.P50, q.P90, q.P99, r.HeldAPIRequestsPerSecond)},
		{"  applied while held", fmt.Sprintf("%d objects (%d once Ready)", r.AppliedWhileHeld, r.AppliedAfterOpen)},
		{"  held-phase API requests", fmt.Sprintf("%d in %.1fs (after %.1fs settling) %s", r.HeldAPIRequests, r.QuietSeconds,
			r.SettleSeconds, orNone(strings.Join(reqs, " ")))},
		{"  API server requests, held phase", orNone(strings.Join(firstN(r.HeldServerRequests, 12), " "))},
		{"  gate Opened after the request", fmt.Sprintf("%.2fs", r.GateOpenedSeconds)},
	}
}

// orNone returns s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
