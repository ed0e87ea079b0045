package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// The failure phase of an -alert run breaks the git sources twice, and
// mends them, while the Alert forwards every event:
//
//  1. fetch failure: the branch the GitRepositories follow is deleted on
//     the git server (every repository's, in the repo-per-app layout), and
//     the sources are asked to reconcile. Each reports Ready=False; the
//     Kustomizations keep the last artifact and stay Ready. The branch is
//     then pushed back at the same commit.
//  2. broken revision: one commit (one per repository) makes every
//     application's manifest invalid YAML. Every Kustomization fails to
//     build it and reports Ready=False, each with an error event of the
//     same reason: the flood the dispatcher folds. A second commit puts
//     the manifests back, and every Kustomization is Ready again.
//
// After each break and each fix the run waits until the sink has been
// quiet for alertQuiet, so that the messages are counted in the step that
// caused them. After the last fix it waits until the folding window of the
// broken revision's failures has closed, and counts what came meanwhile.

// alertQuiet is how long the sink must receive nothing for a step's
// messages to be all in; alertQuietBound bounds that wait.
const (
	alertQuiet      = 2 * time.Second
	alertQuietBound = 20 * time.Second
)

// brokenManifest is an application's manifest in the broken revision:
// its YAML does not parse (an unterminated quoted string).
const brokenManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${app}
data:
  revision: "broken
`

// failurePhase runs the two steps of the failure phase into res, then
// waits for the folding window of the broken revision to close.
func (r *run) failurePhase(ctx context.Context, kit *gitKit, res *AlertResult) error {
	ctx, cancel := context.WithTimeout(ctx, 2*r.cfg.ReadyTimeout+r.alerts.window+alertFlushSlack)
	defer cancel()
	var err error
	if res.FetchFailure, err = r.fetchFailure(ctx, kit, res); err != nil {
		return err
	}
	brokenAt := time.Now()
	if res.BrokenRevision, err = r.brokenRevision(ctx, kit, res); err != nil {
		return err
	}
	// The window of the flood's reason began with its first error event,
	// after brokenAt.
	start, mark := time.Now(), r.alerts.sink.Len()
	if err := sleep(ctx, time.Until(brokenAt.Add(r.alerts.window+alertFlushSlack))); err != nil {
		return err
	}
	res.LateSeconds = time.Since(start).Seconds()
	late, byWhat := tally(r.alerts.sink.Since(mark))
	res.AfterRecovery, res.ByWhat["after_recovery"] = &late, byWhat
	r.logf("after the recovery, %d messages in %.0fs: %v", late.Messages, res.LateSeconds, byWhat)
	return nil
}

// failureStep is one step of the failure phase: what breaks the sources
// and what mends them, and when the objects report either.
type failureStep struct {
	key, what string
	// breaks and fixes change the git server, and return the heads of
	// the repositories then.
	breaks, fixes func() (map[string]string, error)
	// list, want and failed say which objects must report the failure,
	// given the heads after the break; recovered when they are Ready
	// again, given the heads after the fix.
	list              client.ObjectList
	want              int
	failed, recovered func(heads map[string]string) func(client.Object) bool
	describe          func(client.Object) string
	// whileFailed, when set, looks at the cluster once every object
	// reported the failure.
	whileFailed func(ctx context.Context, fr *FailureResult) error
	// sources are the source objects asked to reconcile after each change.
	sources []client.Object
}

// runStep runs the step: break, request a reconcile of the sources, wait for
// every object to report the failure, fix, request again, wait until
// every one is Ready; and counts the messages of each half.
func (r *run) runStep(ctx context.Context, s failureStep, res *AlertResult) (*FailureResult, error) {
	fr := &FailureResult{What: s.what, Failed: s.want}
	sink := r.alerts.sink
	start, mark := time.Now(), sink.Len()
	if err := r.changeSources(ctx, s.key+"-break", s.breaks, s.list, s.want, s.failed, s.describe, s.sources); err != nil {
		return nil, fmt.Errorf("%s: waiting for the failure: %w", s.what, err)
	}
	fr.FailedSeconds = time.Since(start).Seconds()
	warned, err := r.countWarned(ctx, start)
	if err != nil {
		return nil, err
	}
	fr.Warned = warned
	if s.whileFailed != nil {
		if err := s.whileFailed(ctx, fr); err != nil {
			return nil, err
		}
	}
	if err := sink.waitQuiet(ctx, alertQuiet, alertQuietBound); err != nil {
		return nil, err
	}
	fixStart, fixMark := time.Now(), sink.Len()
	if err := r.changeSources(ctx, s.key+"-fix", s.fixes, s.list, s.want, s.recovered, s.describe, s.sources); err != nil {
		return nil, fmt.Errorf("%s: waiting for the recovery: %w", s.what, err)
	}
	fr.RecoveredSeconds = time.Since(fixStart).Seconds()
	if err := sink.waitQuiet(ctx, alertQuiet, alertQuietBound); err != nil {
		return nil, err
	}
	end := sink.Len()
	fr.Failure, res.ByWhat[s.key+"/failure"] = tally(sink.Between(mark, fixMark))
	fr.Recovery, res.ByWhat[s.key+"/recovery"] = tally(sink.Between(fixMark, end))
	r.logf("%s: %d failed in %.2fs (%d messages: %v), Ready again in %.2fs (%d messages: %v)", s.what, fr.Failed, fr.FailedSeconds,
		fr.Failure.Messages, res.ByWhat[s.key+"/failure"], fr.RecoveredSeconds, fr.Recovery.Messages, res.ByWhat[s.key+"/recovery"])
	return fr, nil
}

// changeSources changes the git server with change, asks every source to
// reconcile, and waits until want objects of list's kind satisfy
// done(heads).
func (r *run) changeSources(ctx context.Context, token string, change func() (map[string]string, error), list client.ObjectList,
	want int, done func(map[string]string) func(client.Object) bool, describe func(client.Object) string, sources []client.Object) error {
	heads, err := change()
	if err != nil {
		return err
	}
	token = "bench-" + token + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := requestReconcile(ctx, r.c, sources, token, workers); err != nil {
		return err
	}
	return r.withOutput(waitAll(ctx, r.c, r.ns, list, want, done(heads), describe))
}

// fetchFailure is step 1: the branch is deleted, then put back.
func (r *run) fetchFailure(ctx context.Context, kit *gitKit, res *AlertResult) (*FailureResult, error) {
	sources := kit.Sources(r.ns)
	var heads map[string]string
	return r.runStep(ctx, failureStep{
		key:  "fetch_failure",
		what: "branch " + branch + " deleted on the git server",
		breaks: func() (map[string]string, error) {
			var err error
			heads, err = kit.deleteBranches()
			return heads, err
		},
		fixes:     func() (map[string]string, error) { return heads, kit.restoreBranches(heads) },
		list:      kit.NewList(),
		want:      len(sources),
		failed:    func(map[string]string) func(client.Object) bool { return sourceNotReady },
		recovered: sourceReadyAt,
		describe:  describeSource,
		sources:   sources,
		whileFailed: func(ctx context.Context, fr *FailureResult) error {
			n, err := r.countReady(ctx)
			fr.KustomizationsReady = &n
			return err
		},
	}, res)
}

// brokenRevision is step 2: a commit breaks every application's
// manifest, another puts them back.
func (r *run) brokenRevision(ctx context.Context, kit *gitKit, res *AlertResult) (*FailureResult, error) {
	return r.runStep(ctx, failureStep{
		key:  "broken_revision",
		what: "a commit makes every manifest invalid",
		breaks: func() (map[string]string, error) {
			return kit.commitApps(ctx, func(int) string { return brokenManifest }, "break every app")
		},
		fixes:  func() (map[string]string, error) { return kit.commitApps(ctx, kit.manifestsOf, "fix every app") },
		list:   &kustomizev1.KustomizationList{},
		want:   r.cfg.N,
		failed: ksFailedAt,
		recovered: func(heads map[string]string) func(client.Object) bool {
			return func(obj client.Object) bool {
				return appliedRevision(heads[obj.(*kustomizev1.Kustomization).Spec.SourceRef.Name])(obj)
			}
		},
		describe: describeKs,
		sources:  kit.Sources(r.ns),
	}, res)
}

// countWarned counts the objects of the run's namespace with a Warning
// event recorded at since or later: the failures the controller reported,
// each of which it handed to the dispatcher.
func (r *run) countWarned(ctx context.Context, since time.Time) (int, error) {
	var list corev1.EventList
	if err := r.c.List(ctx, &list, client.InNamespace(r.ns), client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return 0, fmt.Errorf("listing the Warning events: %w", err)
	}
	objects := map[string]bool{}
	for _, e := range list.Items {
		if !eventTime(e).Before(since.Truncate(time.Second)) {
			objects[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] = true
		}
	}
	return len(objects), nil
}

// eventTime returns the last time an event was recorded, whichever API
// wrote it.
func eventTime(e corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

// countReady counts the Kustomizations that are Ready.
func (r *run) countReady(ctx context.Context) (int, error) {
	var list kustomizev1.KustomizationList
	if err := r.c.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		if ksReady(&list.Items[i]) {
			n++
		}
	}
	return n, nil
}

// sourceNotReady reports whether a source's Ready condition is False.
func sourceNotReady(obj client.Object) bool {
	return conditionIs(obj, metav1.ConditionFalse)
}

// sourceReadyAt returns a predicate true once a source is Ready with an
// artifact of the head of its repository.
func sourceReadyAt(heads map[string]string) func(client.Object) bool {
	return func(obj client.Object) bool {
		a, ok := obj.(interface{ GetArtifact() *meta.Artifact })
		if !ok || a.GetArtifact() == nil || !conditionIs(obj, metav1.ConditionTrue) {
			return false
		}
		return strings.HasSuffix(a.GetArtifact().Revision, ":"+heads[obj.GetName()])
	}
}

// conditionIs reports whether a source's Ready condition has status.
func conditionIs(obj client.Object, status metav1.ConditionStatus) bool {
	o, ok := obj.(interface{ GetConditions() []metav1.Condition })
	if !ok {
		return false
	}
	c := apimeta.FindStatusCondition(o.GetConditions(), meta.ReadyCondition)
	return c != nil && c.Status == status
}

// ksFailedAt returns a predicate true once a Kustomization reports
// Ready=False after attempting the head of its source.
func ksFailedAt(heads map[string]string) func(client.Object) bool {
	return func(obj client.Object) bool {
		k := obj.(*kustomizev1.Kustomization)
		return strings.HasSuffix(k.Status.LastAttemptedRevision, ":"+heads[k.Spec.SourceRef.Name]) &&
			apimeta.IsStatusConditionFalse(k.Status.Conditions, meta.ReadyCondition)
	}
}

// deleteBranches deletes the branch of every repository and returns the
// commits it pointed at, by source name.
func (k *gitKit) deleteBranches() (map[string]string, error) {
	heads, err := repoHeads(k.repos)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(k.repos)) {
		if err := k.repos[name].DeleteRef("refs/heads/" + branch); err != nil {
			return nil, err
		}
	}
	return heads, nil
}

// restoreBranches points the branch of every repository at its commit in
// heads again.
func (k *gitKit) restoreBranches(heads map[string]string) error {
	for name, repo := range k.repos {
		if err := repo.SetBranch(branch, heads[name]); err != nil {
			return err
		}
	}
	return nil
}

// commitApps commits manifest(i) as the manifest of every application i
// (one commit per repository) and returns the new heads.
func (k *gitKit) commitApps(ctx context.Context, manifest func(i int) string, msg string) (map[string]string, error) {
	files := map[string]map[string]string{}
	for i := range len(k.revisions) {
		name := k.SourceName(i)
		if files[name] == nil {
			files[name] = map[string]string{}
		}
		files[name][k.AppPath(i)+"/app.yaml"] = manifest(i)
	}
	names := slices.Sorted(maps.Keys(files))
	var mu sync.Mutex
	heads := map[string]string{}
	err := parallel(ctx, len(names), 8, func(i int) error {
		sha, err := k.repos[names[i]].Commit(branch, files[names[i]], msg)
		mu.Lock()
		heads[names[i]] = sha
		mu.Unlock()
		return err
	})
	return heads, err
}

// manifestsOf returns the manifest of application i as the source serves
// it now (revision 2 for an application changed by Change).
func (k *gitKit) manifestsOf(i int) string {
	return appManifests(k.revisions[i])
}
