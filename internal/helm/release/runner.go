package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	helmrelease "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/helm/sandbox"
)

// DefaultTimeout is the timeout of an action whose options give none.
const DefaultTimeout = 5 * time.Minute

// Server-side apply modes of Upgrade and Rollback (the values of the
// HelmRelease API).
const (
	// SSAEnabled applies with server-side apply.
	SSAEnabled = "enabled"
	// SSADisabled applies with client-side apply (three-way merge).
	SSADisabled = "disabled"
	// SSAAuto applies as the release it starts from was applied.
	SSAAuto = "auto"
)

// Runner runs Helm actions on the releases stored in one namespace of the
// cluster its Getter reaches. A Runner is cheap: it holds no connection
// of its own. It is safe for concurrent use on different releases; the
// caller must not run two actions on the same release at once.
type Runner struct {
	getter           *Getter
	storageNamespace string
	log              slog.Handler
	// checker, when set, reads the health of the objects that waits wait
	// for (WithHealthChecker).
	checker *health.Checker
	// watch, when set, answers the polls of the checked waits after the
	// first (WithHealthWatch).
	watch health.Watch
	// wakes, when set, starts the next poll of a checked wait when the
	// health of one of its objects changed (WithHealthWakes).
	wakes *health.Wakes
	// polls are the delays between the polls of the checked waits
	// (defaultPolls when zero).
	polls pollDelays
	// sandbox, when set, renders charts in bounded child processes
	// (WithSandbox).
	sandbox *sandbox.Renderer
	// newest, when set, remembers the newest release of each name for
	// the Runners of newestScope (WithNewestCache).
	newest      *NewestCache
	newestScope string
}

// Option configures a Runner.
type Option func(*Runner)

// WithLogHandler sends the Helm SDK's logs to h (they are discarded by
// default).
func WithLogHandler(h slog.Handler) Option {
	return func(r *Runner) {
		if h != nil {
			r.log = h
		}
	}
}

// New returns a Runner whose releases are stored as Secrets
// (sh.helm.release.v1.<name>.v<N>, as the helm CLI stores them) in
// storageNamespace. getter may be nil for a Runner that only renders
// client-side (RenderOptions.ClientOnly).
func New(getter *Getter, storageNamespace string, opts ...Option) (*Runner, error) {
	if getter != nil && storageNamespace == "" {
		return nil, errors.New("no storage namespace given")
	}
	r := &Runner{getter: getter, storageNamespace: storageNamespace, log: slog.DiscardHandler}
	for _, opt := range opts {
		opt(r)
	}
	return r, nil
}

// errNoCluster is returned by the actions of a Runner without a Getter.
var errNoCluster = errors.New("the runner has no cluster to act on")

// storage returns the release storage of the Runner.
func (r *Runner) storage() (*storage.Storage, error) {
	s, _, err := r.recordedStorage()
	return s, err
}

// recordedStorage returns the release storage of the Runner and, with a
// NewestCache, the Secrets client that records for it what the storage
// lists and writes.
func (r *Runner) recordedStorage() (*storage.Storage, *recordingSecrets, error) {
	if r.getter == nil {
		return nil, nil, errNoCluster
	}
	var secrets typedcorev1.SecretInterface = r.getter.clientset.CoreV1().Secrets(r.storageNamespace)
	var rec *recordingSecrets
	if r.newest != nil {
		rec = &recordingSecrets{SecretInterface: secrets, namespace: r.storageNamespace, newest: r.newest}
		secrets = rec
	}
	d := newRecordSecrets(secrets)
	d.SetLogger(r.log)
	s := storage.Init(d)
	s.SetLogger(r.log)
	return s, rec, nil
}

// config builds the action configuration of one action whose objects go to
// namespace; waits of the action end when waitCtx ends.
func (r *Runner) config(waitCtx context.Context, namespace string) (*action.Configuration, error) {
	cfg, _, err := r.recordedConfig(waitCtx, namespace)
	return cfg, err
}

// recordedConfig is config, with the Secrets client that records what the
// storage lists and writes when the Runner has a NewestCache.
func (r *Runner) recordedConfig(waitCtx context.Context, namespace string) (*action.Configuration, *recordingSecrets, error) {
	store, rec, err := r.recordedStorage()
	if err != nil {
		return nil, nil, err
	}
	caps, err := r.getter.capabilities()
	if err != nil {
		return nil, nil, err
	}
	kc := &kube.Client{Factory: r.getter.factory, Namespace: namespace}
	// The legacy waiter reads the client's context; the others get it
	// through waitOptions.
	kc.WaitContext = waitCtx //nolint:staticcheck // read by the legacy waiter
	kc.SetLogger(r.log)
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(r.log))
	cfg.RESTClientGetter = r.getter
	cfg.KubeClient = &checkingClient{Client: kc, checker: r.checker, watch: r.watch, wakes: r.wakes, polls: r.polls, ctx: waitCtx}
	cfg.Releases = store
	cfg.Capabilities = caps
	cfg.SetHookOutputFunc(func(_, _, _ string) io.Writer { return io.Discard })
	return cfg, rec, nil
}

// Last returns the newest release called releaseName, or nil when there is
// none.
func (r *Runner) Last(releaseName string) (*releasev1.Release, error) {
	hist, err := r.History(releaseName, 1)
	if err != nil || len(hist) == 0 {
		return nil, err
	}
	return hist[0], nil
}

// remember keeps rel, which an action of the Runner wrote last, as the
// newest release of its name: rec recorded the version of its Secret that
// the write's answer gave, as a list would have.
func (r *Runner) remember(rec *recordingSecrets, rel *releasev1.Release) {
	if rec == nil || rel == nil {
		return
	}
	r.newest.put(r.newestScope, r.storageNamespace, rel, rec.listedVersion(rel.Name, rel.Version))
}

// History returns up to max releases called releaseName, newest first (all
// of them when max <= 0); none when there is no such release.
func (r *Runner) History(releaseName string, max int) ([]*releasev1.Release, error) {
	store, rec, err := r.recordedStorage()
	if err != nil {
		return nil, err
	}
	found, err := store.History(releaseName)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the history of release %s: %w", releaseName, err)
	}
	rels, err := toV1(found)
	if err != nil {
		return nil, err
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].Version > rels[j].Version })
	if rec != nil && len(rels) > 0 {
		r.newest.put(r.newestScope, r.storageNamespace, rels[0], rec.listedVersion(releaseName, rels[0].Version))
	}
	if max > 0 && len(rels) > max {
		rels = rels[:max]
	}
	return rels, nil
}

// RecoverPending returns the newest release called releaseName (nil when
// there is none), first marked failed when it is pending-install,
// pending-upgrade or pending-rollback, which means that the process running
// the action was stopped: the caller guarantees that no action on the
// release is running. recovered tells whether it marked it. It reads the
// release storage at most once, and not at all when a NewestCache still
// holds the newest release: what it returns then is a summary, whose chart
// holds only its metadata and which has no hooks (the actions read the
// releases they need in full).
//
// After it, the release can be upgraded as it is: an upgrade starts from
// the last deployed release or, when there is none (an interrupted first
// install), from the failed one. Install only succeeds with Replace.
func (r *Runner) RecoverPending(ctx context.Context, releaseName string) (last *releasev1.Release, recovered bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if r.newest != nil {
		if summary, ok := r.newest.get(ctx, r.newestScope, r.storageNamespace, releaseName); ok {
			return summary, false, nil // never pending
		}
	}
	last, err = r.Last(releaseName)
	if err != nil || last == nil || !last.Info.Status.IsPending() {
		return last, false, err
	}
	was := last.Info.Status
	last.SetStatus(rcommon.StatusFailed, fmt.Sprintf(
		"Release %q was interrupted while %s: marked failed to unlock it", releaseName, was))
	if err := r.update(last); err != nil {
		return nil, false, fmt.Errorf("marking the interrupted release %s v%d failed: %w", releaseName, last.Version, err)
	}
	return last, true, nil
}

// update stores rel over its stored version.
func (r *Runner) update(rel *releasev1.Release) error {
	store, err := r.storage()
	if err != nil {
		return err
	}
	return store.Update(rel)
}

// toV1 converts releases read from storage.
func toV1(in []helmrelease.Releaser) ([]*releasev1.Release, error) {
	out := make([]*releasev1.Release, 0, len(in))
	for _, r := range in {
		rel, err := toV1Release(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rel)
	}
	return out, nil
}

// toV1Release converts a release returned by an action.
func toV1Release(in helmrelease.Releaser) (*releasev1.Release, error) {
	switch rel := in.(type) {
	case nil:
		return nil, nil
	case *releasev1.Release:
		return rel, nil
	case releasev1.Release:
		return &rel, nil
	default:
		return nil, fmt.Errorf("unsupported release type %T", in)
	}
}

// waitStrategy returns the wait strategy of an action: strategy (the
// kstatus watcher when empty) when wait is set, hooks only otherwise.
func waitStrategy(wait bool, strategy kube.WaitStrategy) kube.WaitStrategy {
	switch {
	case !wait:
		return kube.HookOnlyStrategy
	case strategy == "":
		return kube.StatusWatcherStrategy
	default:
		return strategy
	}
}

// timeoutOrDefault returns timeout, or DefaultTimeout when it is not
// positive.
func timeoutOrDefault(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return DefaultTimeout
	}
	return timeout
}

// actionContext returns the context that bounds the waits of an action:
// ctx limited to timeout.
func actionContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	return waitCtx, cancel, nil
}

// resolveSSA turns a server-side apply mode into "true" or "false", as the
// release applyMethod says for auto.
func resolveSSA(mode, applyMethod string) (bool, error) {
	switch mode {
	case SSAEnabled:
		return true, nil
	case SSADisabled:
		return false, nil
	case SSAAuto, "":
		return applyMethod == string(releasev1.ApplyMethodServerSideApply), nil
	default:
		return false, fmt.Errorf("unknown server-side apply mode %q (want %s, %s or %s)", mode, SSAEnabled, SSADisabled, SSAAuto)
	}
}

// ssaFlag is the SDK's spelling of a resolved server-side apply mode.
func ssaFlag(ssa bool) string {
	if ssa {
		return "true"
	}
	return "false"
}

// postRenderStrategy maps the HelmRelease postRenderStrategy to the SDK's.
func postRenderStrategy(s string) (action.PostRenderStrategy, error) {
	switch s {
	case "", string(action.PostRenderStrategyCombined):
		return action.PostRenderStrategyCombined, nil
	case string(action.PostRenderStrategyNoHooks), string(action.PostRenderStrategySeparate):
		return action.PostRenderStrategy(s), nil
	default:
		return "", fmt.Errorf("unknown post-render strategy %q", s)
	}
}

// guard runs fn and turns a panic of the SDK (a template or chart that
// makes it panic) into an error.
func guard[T any](what string, fn func() (T, error)) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: the Helm SDK panicked: %v", what, p)
		}
	}()
	return fn()
}

// copyChart returns a copy of ch that the SDK may change (it rewrites the
// dependencies, their enabled flags and import values, and the values of
// the chart it is given), so that one loaded chart can serve many
// releases at once. Files are shared: nothing changes them.
func copyChart(ch *chart.Chart) *chart.Chart {
	if ch == nil {
		return nil
	}
	out := *ch
	if ch.Metadata != nil {
		md := *ch.Metadata
		if ch.Metadata.Dependencies != nil {
			md.Dependencies = make([]*chart.Dependency, len(ch.Metadata.Dependencies))
			for i, d := range ch.Metadata.Dependencies {
				if d != nil {
					dc := *d
					md.Dependencies[i] = &dc
				}
			}
		}
		out.Metadata = &md
	}
	out.Values = copyValues(ch.Values)
	subs := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, sub := range ch.Dependencies() {
		subs = append(subs, copyChart(sub))
	}
	out.SetDependencies(subs...)
	return &out
}

// copyValues deep-copies a values tree of maps and slices.
func copyValues(in map[string]any) map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = copyValue(v)
	}
	return out
}

// copyValue deep-copies one value of a values tree.
func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyValues(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyValue(e)
		}
		return out
	default:
		return v
	}
}
