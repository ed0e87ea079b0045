package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

// workers is how many objects the benchmark creates or annotates at once.
const workers = 16

// measure runs the three phases into res, with the web UI's after the
// first in a -ui run (see uiPhase); a -kind helmrelease run and an -image
// run have phases of their own (see measureHelm, measureImage).
func (r *run) measure(ctx context.Context, res *Result) error {
	if r.cfg.Image {
		return r.measureImage(ctx, res)
	}
	sources := r.kit.Sources(r.ns)
	if r.cfg.Kind == KindHelmRelease {
		r.apps = r.helmReleaseApps()
		return r.measureHelm(ctx, res, sources)
	}
	r.apps = kustomizationApps(r.ns, r.kit.NewList(), len(sources))
	var kss []client.Object
	for i := range r.cfg.N {
		k := kustomization(r.ns, r.kit, i)
		if r.cfg.Gate {
			k.Spec.Gates = []meta.NamespacedObjectReference{{Name: gateName}}
		}
		kss = append(kss, k)
	}
	r.alerts.mark(phaseReady)
	if err := r.readyPhase(ctx, res, sources, kss); err != nil {
		return err
	}
	if err := r.metricsPhase(ctx, res); err != nil {
		return err
	}
	if r.cfg.UI {
		if err := r.uiPhase(ctx, res); err != nil {
			return err
		}
	}
	r.alerts.mark(phaseChange)
	if err := r.changePhase(ctx, res); err != nil {
		return err
	}
	r.alerts.mark(phaseNoop)
	if err := r.noopTick(ctx, res, append(append([]client.Object{}, sources...), kss...)); err != nil {
		return err
	}
	if r.cfg.Generator {
		return r.generatorPhase(ctx, res)
	}
	return nil
}

// readyPhase creates the sources and the Kustomizations and waits until
// every application is Ready; with -gate, first held behind the closed
// gate, then released by opening it.
func (r *run) readyPhase(ctx context.Context, res *Result, sources, kss []client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	cpu0, served0 := processCPU(), serverRequestsOrNil(ctx, r.restCfg)
	downloads0 := r.kit.Downloads()
	requests0, err := r.ctrl.awaitAPIRequests(ctx)
	if err != nil {
		return err
	}
	started := time.Now()
	profiled := startProfiles(ctx, r.cfg, r.restCfg, r.logf)
	defer profiled()
	var tl timeline
	if r.cfg.Gate {
		heads, err := r.kit.Heads()
		if err != nil {
			return err
		}
		gr := &gatedRun{c: r.c, ns: r.ns, n: r.cfg.N, ctrl: r.ctrl, restCfg: r.restCfg, quiet: r.cfg.GateQuiet,
			sourceList: r.kit.NewList(), logf: r.logf}
		if tl, res.Gate, err = gr.run(ctx, sources, kss, heads); err != nil {
			return r.withOutput(err)
		}
	} else if tl, err = r.createAndWaitReady(ctx, sources, kss); err != nil {
		return r.withOutput(err)
	}
	res.ReadySeconds = tl.seconds
	res.Details.SourceQuantiles = tl.source
	res.Details.AppliedQuantiles = tl.applied
	res.Details.ReadyQuantiles = tl.ready
	st, err := r.ctrl.stats()
	if err != nil {
		return err
	}
	res.CPUSeconds = st.CPUSeconds
	if err := r.recordReplicasReady(); err != nil {
		return err
	}
	res.Details.ReadyCPU = cpuDelta(cpu0, processCPU())
	res.Details.ReadyServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, r.restCfg))
	if res.APIRequests, _, err = r.ctrl.apiRequests(); err != nil {
		return err
	}
	res.Details.ReadyDownloads = countsDelta(downloads0, r.kit.Downloads())
	if res.ReadyRequests, err = r.requestBudget(ctx, requests0, started); err != nil {
		return err
	}
	r.logf("all %d ready in %.2fs; API server requests: %s", r.cfg.N, res.ReadySeconds, strings.Join(res.Details.ReadyServerRequests, " "))
	return nil
}

// requestBudget waits until the controller's requests stand still (the
// Events and status updates that follow a phase), then returns its
// requests since requests0, per application, with the Events recorded
// since started attributed to their kinds.
func (r *run) requestBudget(ctx context.Context, requests0 requestCounts, started time.Time) (*RequestBudget, error) {
	if _, err := r.ctrl.waitRequestsStill(ctx, 10*time.Second); err != nil {
		return nil, err
	}
	requests1, err := r.ctrl.apiRequestsByRequest()
	if err != nil {
		return nil, err
	}
	events, err := eventsByKind(ctx, r.c, r.apps.ns, started)
	if err != nil {
		return nil, err
	}
	return budget(requests0, requests1, events, r.cfg.N, r.apps.kind), nil
}

// changePhase changes app 0 in its source (a commit, a push or a put),
// requests a reconcile of the source, and waits until the change is
// applied; then until every Kustomization has applied its source's head.
func (r *run) changePhase(ctx context.Context, res *Result) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	mark, err := r.markCost()
	if err != nil {
		return err
	}
	start := time.Now()
	head, err := r.kit.Change(ctx)
	if err != nil {
		return err
	}
	steps := &ChangeSteps{ChangedSeconds: time.Since(start).Seconds()}
	artifact := r.waitArtifact(ctx, head, start, steps)
	token := "bench-change-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	src := r.kit.NewObject()
	src.SetNamespace(r.ns)
	src.SetName(r.kit.SourceName(0))
	if err := requestReconcile(ctx, r.c, []client.Object{src}, token, 1); err != nil {
		return err
	}
	if err := waitAll(ctx, r.c, r.ns, &kustomizev1.KustomizationList{}, 1, appliedRevision(head), describeKs,
		client.MatchingFields{"metadata.name": appName(0)}); err != nil {
		return r.withOutput(fmt.Errorf("waiting for the change to be applied: %w", err))
	}
	res.ChangeToAppliedSeconds = time.Since(start).Seconds()
	if err := <-artifact; err != nil {
		return err
	}
	res.ChangeSteps = steps
	r.logf("change applied in %.2fs (in the source server after %.2fs, its artifact after %.2fs)",
		res.ChangeToAppliedSeconds, steps.ChangedSeconds, steps.ArtifactSeconds)
	// Let every Kustomization settle on its source's head (in the monorepo
	// layout, every one of them applies the new revision).
	heads, err := r.kit.Heads()
	if err != nil {
		return err
	}
	settled := func(obj client.Object) bool {
		k := obj.(*kustomizev1.Kustomization)
		return appliedRevision(heads[k.Spec.SourceRef.Name])(k)
	}
	if err := waitAll(ctx, r.c, r.ns, &kustomizev1.KustomizationList{}, r.cfg.N, settled, describeKs); err != nil {
		return r.withOutput(fmt.Errorf("waiting for every Kustomization to apply its source's head: %w", err))
	}
	return r.recordChangeCost(ctx, res, mark, start)
}

// recordChangeCost records in res what the change phase, started at start
// with the controller at mark, cost the controller once its requests stand
// still.
func (r *run) recordChangeCost(ctx context.Context, res *Result, mark costMark, start time.Time) error {
	budget, err := r.requestBudget(ctx, mark.requests, start)
	if err != nil {
		return err
	}
	cpu, err := r.cpuSince(mark)
	res.ChangeCost = &ChangeCost{Requests: budget.Total, CPUSeconds: cpu}
	return err
}

// costMark is where the controller stood, in API requests and CPU, when a
// phase began: what the phase cost is measured from it.
type costMark struct {
	requests requestCounts
	stats    procStats
}

// markCost returns the controller's costMark now.
func (r *run) markCost() (costMark, error) {
	requests, err := r.ctrl.apiRequestsByRequest()
	if err != nil {
		return costMark{}, err
	}
	st, err := r.ctrl.stats()
	return costMark{requests: requests, stats: st}, err
}

// cpuSince returns the CPU seconds the controller used since mark.
func (r *run) cpuSince(mark costMark) (float64, error) {
	st, err := r.ctrl.stats()
	if err != nil {
		return 0, err
	}
	return st.CPUSeconds - mark.stats.CPUSeconds, nil
}

// waitArtifact waits, in the background, until application 0's source has
// an artifact of head, and records when in steps; the channel gets the
// wait's error once it ends.
func (r *run) waitArtifact(ctx context.Context, head string, start time.Time, steps *ChangeSteps) <-chan error {
	done := make(chan error, 1)
	atHead := func(obj client.Object) bool {
		a, ok := obj.(interface{ GetArtifact() *meta.Artifact })
		return ok && a.GetArtifact() != nil && strings.HasSuffix(a.GetArtifact().Revision, ":"+head)
	}
	go func() {
		err := waitAll(ctx, r.c, r.ns, r.kit.NewList(), 1, atHead, describeSource,
			client.MatchingFields{"metadata.name": r.kit.SourceName(0)})
		steps.ArtifactSeconds = time.Since(start).Seconds()
		done <- err
	}()
	return done
}

// noopTick requests a reconcile of every object in all with nothing
// changed, waits until each has handled it, and counts what it downloaded
// from the source server and wrote to the artifact storage.
func (r *run) noopTick(ctx context.Context, res *Result, all []client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	before, err := r.snapshotStorages()
	if err != nil {
		return err
	}
	downloads0 := r.kit.Downloads()
	st0, api0, err := r.controllerMark()
	if err != nil {
		return err
	}
	cpu0, served0 := processCPU(), serverRequestsOrNil(ctx, r.restCfg)
	requests0, err := r.ctrl.apiRequestsByRequest()
	if err != nil {
		return err
	}
	token := "bench-noop-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	start := time.Now()
	if err := r.waitHandled(ctx, all, token); err != nil {
		return err
	}
	res.NoopTickSeconds = time.Since(start).Seconds()
	res.Details.NoopCPU = cpuDelta(cpu0, processCPU())
	res.Details.NoopServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, r.restCfg))
	// Give writes that follow the status update a moment to land.
	time.Sleep(time.Second)
	written, err := r.writtenSince(before)
	if err != nil {
		return err
	}
	res.Details.NoopWrittenFiles = written
	res.NoopTickDownloads = countsDelta(downloads0, r.kit.Downloads())
	res.Details.NoopDownloads = sum(res.NoopTickDownloads)
	res.Details.NoopFiles = int64(len(written))
	res.NoopTickWrites = res.Details.NoopDownloads + res.Details.NoopFiles
	if err := r.recordNoopController(res, st0, api0); err != nil {
		return err
	}
	if res.NoopTickRequests, err = r.requestBudget(ctx, requests0, start); err != nil {
		return err
	}
	res.NoopTickRequestsPerObject = ratio(res.NoopTickRequests.Total, len(all))
	r.logf("no-op tick handled in %.2fs: downloads %v, %d files written %s",
		res.NoopTickSeconds, res.NoopTickDownloads, res.Details.NoopFiles, strings.Join(written, " "))
	return nil
}

// controllerMark reads the controller's figures at the start of a no-op
// tick: its stats and its API requests by method (see
// recordNoopController).
func (r *run) controllerMark() (procStats, map[string]int64, error) {
	st, err := r.ctrl.stats()
	if err != nil {
		return st, nil, err
	}
	_, api, err := r.ctrl.apiRequests()
	return st, api, err
}

// recordNoopController records into res the controller's CPU time since
// st0, its peak memory, and its API requests since api0, by method.
func (r *run) recordNoopController(res *Result, st0 procStats, api0 map[string]int64) error {
	st1, err := r.ctrl.stats()
	if err != nil {
		return err
	}
	res.Details.NoopCPUSeconds = st1.CPUSeconds - st0.CPUSeconds
	res.PeakRSSBytes = st1.PeakRSSBytes
	_, api1, err := r.ctrl.apiRequests()
	if err != nil {
		return err
	}
	res.Details.NoopAPIRequests = map[string]int64{}
	for m, v := range api1 {
		if d := v - api0[m]; d != 0 {
			res.Details.NoopAPIRequests[m] = d
		}
	}
	return nil
}

// waitHandled annotates every object of all with the reconcile request
// token and waits until every source, then every Kustomization (still
// Ready), echoes it.
func (r *run) waitHandled(ctx context.Context, all []client.Object, token string) error {
	if err := requestReconcile(ctx, r.c, all, token, workers); err != nil {
		return err
	}
	nSources := len(all) - r.cfg.N
	if err := waitAll(ctx, r.c, r.ns, r.kit.NewList(), nSources, handled(token), describeSource); err != nil {
		return r.withOutput(fmt.Errorf("waiting for every %s to handle the tick: %w", r.kit.Kind(), err))
	}
	appHandled := func(obj client.Object) bool { return handled(token)(obj) && r.apps.ready(obj) }
	if err := waitAll(ctx, r.c, r.apps.ns, r.apps.newList(), r.cfg.N, appHandled, r.apps.describe, r.apps.opts...); err != nil {
		return r.withOutput(fmt.Errorf("waiting for every %s to handle the tick: %w", r.apps.kind, err))
	}
	return nil
}

// writtenSince returns the artifact files, relative to the storage
// folder and sorted, created or changed since the snapshot before.
func (r *run) writtenSince(before map[string]fileState) ([]string, error) {
	after, err := r.snapshotStorages()
	if err != nil {
		return nil, err
	}
	written := writtenFiles(before, after)
	base := r.storageBase()
	for i, p := range written {
		if rel, err := filepath.Rel(base, p); err == nil {
			written[i] = rel
		}
	}
	sort.Strings(written)
	return written, nil
}

// timeline is what the ready phase measures: the seconds until every
// Kustomization was Ready, and the 10%, 50%, 90% and 99% quantiles of the
// times the sources got their first artifact and the Kustomizations first
// applied and were Ready.
type timeline struct {
	seconds                float64
	source, applied, ready []float64
}

// createAndWaitReady creates the sources, then the applications'
// objects (Kustomizations or HelmReleases), workers at a time, and waits
// until every one is Ready, recording the timeline from the first
// creation.
func (r *run) createAndWaitReady(ctx context.Context, sources, kss []client.Object) (timeline, error) {
	// The waits watch from before the first object is created, so that
	// the timeline holds the objects done while others are being created.
	start := time.Now()
	sourceAt, appliedAt, readyAt := firstTimes{start: start}, firstTimes{start: start}, firstTimes{start: start}
	sourcesDone := make(chan struct{})
	go func() {
		defer close(sourcesDone)
		// Only a timeline: the applications' wait below reports failures.
		_ = waitAll(ctx, r.c, r.ns, r.apps.sourceList.DeepCopyObject().(client.ObjectList), r.apps.nSources,
			sourceAt.record(hasArtifact), describeSource)
	}()
	firstReady := func(obj client.Object) bool {
		appliedAt.record(r.apps.applied)(obj)
		return readyAt.record(r.apps.ready)(obj)
	}
	ready := make(chan error, 1)
	go func() {
		ready <- waitAll(ctx, r.c, r.apps.ns, r.apps.newList(), len(kss), firstReady, r.apps.describe, r.apps.opts...)
	}()
	all := append(append([]client.Object{}, sources...), kss...)
	if err := parallel(ctx, len(all), workers, func(i int) error {
		return r.c.Create(ctx, all[i].DeepCopyObject().(client.Object))
	}); err != nil {
		return timeline{}, fmt.Errorf("creating the objects: %w", err)
	}
	r.logf("created %d objects in %.1fs", len(all), time.Since(start).Seconds())
	if err := <-ready; err != nil {
		return timeline{}, fmt.Errorf("waiting for every %s to be Ready: %w", r.apps.kind, err)
	}
	tl := timeline{seconds: time.Since(start).Seconds()}
	<-sourcesDone
	tl.source, tl.applied, tl.ready = sourceAt.quantiles(), appliedAt.quantiles(), readyAt.quantiles()
	return tl, nil
}

// cleanup deletes the applications' objects of apps (Kustomizations,
// which prune their workloads, or HelmReleases, which uninstall theirs)
// and the sources of kit's kind in namespace ns, waits until the
// controller has let them go, deletes the Gates (after their consumers,
// which they must not hold) and the namespace.
func cleanup(ctx context.Context, c client.WithWatch, ns string, kit sourceKit, apps appKind) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := deleteApps(ctx, c, apps); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	if err := c.DeleteAllOf(ctx, &sourceextv1beta1.ArtifactGenerator{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	if err := c.DeleteAllOf(ctx, kit.NewObject(), client.InNamespace(ns)); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	for _, w := range []struct {
		list client.ObjectList
		opts []client.ListOption
	}{
		{apps.newList(), append([]client.ListOption{client.InNamespace(apps.ns)}, apps.opts...)},
		{kit.NewList(), []client.ListOption{client.InNamespace(ns)}},
	} {
		list := w.list
		for {
			if err := c.List(ctx, list, w.opts...); err != nil {
				return fmt.Errorf("cleaning up: %w", err)
			}
			if apimeta.LenList(list) == 0 {
				break
			}
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return fmt.Errorf("cleaning up: %d objects left: %w", apimeta.LenList(list), err)
			}
		}
	}
	if err := c.DeleteAllOf(ctx, &gatingv1alpha1.Gate{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	if err := deleteAppNamespaces(ctx, c, ns); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("cleaning up: %w", err)
	}
	return waitNamespacesGone(ctx, c, ns)
}

// waitNamespacesGone waits until the namespace ns and those of its
// applications are gone: the namespace controller empties them after the
// run, and its deletions must not be counted as the writes of the next run
// on the same cluster.
func waitNamespacesGone(ctx context.Context, c client.Client, ns string) error {
	for {
		var list corev1.NamespaceList
		if err := c.List(ctx, &list, client.MatchingLabels{runLabel: ns}); err != nil {
			return fmt.Errorf("cleaning up: %w", err)
		}
		err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if len(list.Items) == 0 && apierrors.IsNotFound(err) {
			return nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("cleaning up: the namespaces of the run are not gone: %w", err)
		}
	}
}

// deleteApps deletes the applications' objects of apps: all of their kind
// in their namespace, or, when they are in several, each one selected.
func deleteApps(ctx context.Context, c client.WithWatch, apps appKind) error {
	if apps.ns != "" {
		return c.DeleteAllOf(ctx, apps.newObject(), append([]client.DeleteAllOfOption{client.InNamespace(apps.ns)},
			deleteOpts(apps.opts)...)...)
	}
	list := apps.newList()
	if err := c.List(ctx, list, apps.opts...); err != nil {
		return err
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		if err := c.Delete(ctx, item.(client.Object)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// deleteOpts keeps the list options that are also delete-all-of options
// (the label selectors).
func deleteOpts(opts []client.ListOption) []client.DeleteAllOfOption {
	var out []client.DeleteAllOfOption
	for _, o := range opts {
		if d, ok := o.(client.DeleteAllOfOption); ok {
			out = append(out, d)
		}
	}
	return out
}
