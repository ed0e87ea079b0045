package metrics

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/state"
)

// The families read from the cache at each scrape, about every object of
// the kinds served (see Resources).
const (
	resourceInfoName = "gotk_resource_info"
	resourceInfoHelp = "The current state of a GitOps Toolkit resource: its kind, readiness, suspension, revision and source."
	readySinceName   = "windlass_resource_ready_transition_timestamp_seconds"
	readySinceHelp   = "When the object's Ready condition last changed status, in seconds since the epoch."
	intervalName     = "windlass_resource_interval_seconds"
	intervalHelp     = "The object's spec.interval, in seconds."
	artifactSizeName = "windlass_artifact_size_bytes"
	artifactSizeHelp = "The size of the artifact a source publishes, in bytes."
	artifactTimeName = "windlass_artifact_last_update_timestamp_seconds"
	artifactTimeHelp = "When the source's artifact last changed revision, in seconds since the epoch."
	heldSinceName    = "windlass_gate_held_since_timestamp_seconds"
	heldSinceHelp    = "Since when a closed gate holds the object back, in seconds since the epoch."
	imageTagsName    = "windlass_image_repository_tags"
	imageTagsHelp    = "The tags an ImageRepository's last scan kept."
	cachedName       = "windlass_cache_objects"
	cachedHelp       = "The objects of each kind the controller holds in its cache."
)

// resourceInfoLabels are gotk_resource_info's: those the reference's
// kube-state-metrics configuration gives it, plus reason, state and kind
// (the kind of the windlass_* series, to join them).
var resourceInfoLabels = []string{"customresource_group", "customresource_version", "customresource_kind", kindLabel,
	namespaceLabel, nameLabel, "ready", "reason", "state", "suspended", "revision", "source_name", "url", "chart_name"}

// listTimeout bounds a scrape's reading of the cache.
const listTimeout = 10 * time.Second

// resources writes the series about each object, read from the caches of
// the managers that Serve registered.
type resources struct {
	mu      sync.Mutex
	sources map[*resourceSource]struct{}
}

// resourceSource is one manager's cache and the kinds it serves.
type resourceSource struct {
	reader client.Reader
	kinds  []kinds.Kind
	// reports, when set, tells which objects this process reports: the
	// replicas that share the objects report those they hold.
	reports func(kind string, obj client.Object) bool
}

// Resources are the series about every object of the served kinds, that
// Handler writes.
var Resources = &resources{sources: map[*resourceSource]struct{}{}}

// Serve reports the objects of ks that reader (a manager's cache) holds,
// and that reports (when not nil) passes, until ctx is done: called by the
// elected manager only, so that a standby replica reports nothing twice,
// and with reports by the replicas that share the objects.
func (r *resources) Serve(ctx context.Context, reader client.Reader, ks []kinds.Kind, reports func(kind string, obj client.Object) bool) {
	src := &resourceSource{reader: reader, kinds: ks, reports: reports}
	r.mu.Lock()
	r.sources[src] = struct{}{}
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	delete(r.sources, src)
	r.mu.Unlock()
}

// facts are what the families say of one object, read once a scrape.
type facts struct {
	kind       *kinds.Kind
	obj        client.Object
	info       kinds.Info
	ready      string
	reason     string
	state      string
	suspended  string
	readySince float64 // 0: no Ready condition
	heldSince  float64 // 0: not held
}

// objectsOf returns the facts of every object the sources hold, and the
// number of objects of each kind: each kind read once, from the first
// source that serves it (a process runs one manager; tests may run more).
func (r *resources) objectsOf(ctx context.Context) ([]facts, map[string]int) {
	r.mu.Lock()
	sources := make([]*resourceSource, 0, len(r.sources))
	for s := range r.sources {
		sources = append(sources, s)
	}
	r.mu.Unlock()
	var all []facts
	counts := map[string]int{}
	for _, s := range sources {
		for i := range s.kinds {
			k := &s.kinds[i]
			if _, listed := counts[k.Kind]; listed {
				continue // a kind twice in one exposition would be refused whole
			}
			list := k.NewList()
			// Read only: the families copy nothing but strings' headers.
			if err := s.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
				continue
			}
			items := k.Items(list)
			counts[k.Kind] += len(items)
			slices.SortFunc(items, func(a, b client.Object) int {
				return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
			})
			for _, obj := range items {
				if s.reports == nil || s.reports(k.Kind, obj) {
					all = append(all, factsOf(k, obj))
				}
			}
		}
	}
	return all, counts
}

// factsOf returns the facts of obj, of kind k.
func factsOf(k *kinds.Kind, obj client.Object) facts {
	f := facts{kind: k, obj: obj}
	if k.Info != nil {
		f.info = k.Info(obj)
	}
	if o, ok := obj.(state.Object); ok {
		f.state, f.suspended = string(state.Of(o, k.Static)), strconv.FormatBool(o.IsSuspended())
		if c := conditions.Get(o, meta.ReadyCondition); c != nil {
			f.ready, f.reason, f.readySince = string(c.Status), c.Reason, seconds(c.LastTransitionTime.Time)
		}
		f.heldSince = heldSinceOf(o)
	}
	return f
}

// resourceFamilies are the families writeText writes.
var resourceFamilies = []string{resourceInfoName, readySinceName, intervalName, artifactSizeName, artifactTimeName,
	heldSinceName, imageTagsName, cachedName}

// writeText writes the families of every object the sources hold.
func (r *resources) writeText(ctx context.Context, t *textWriter) {
	if !t.wants(resourceFamilies...) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	all, counts := r.objectsOf(ctx)
	t.family(resourceInfoName, resourceInfoHelp, "gauge")
	for _, f := range all {
		gv := f.kind.GroupVersion
		t.sample(resourceInfoName, resourceInfoLabels, []string{gv.Group, gv.Version, f.kind.Kind, f.kind.Kind,
			f.obj.GetNamespace(), f.obj.GetName(), f.ready, f.reason, f.state, f.suspended,
			f.info.Revision, f.info.Source, f.info.URL, f.info.Chart}, "", "", 1)
	}
	objectGauge(t, readySinceName, readySinceHelp, all, func(f facts) (float64, bool) { return f.readySince, f.ready != "" })
	objectGauge(t, intervalName, intervalHelp, all, func(f facts) (float64, bool) {
		o, ok := f.obj.(interface{ GetRequeueAfter() time.Duration })
		if !ok || f.kind.Static {
			return 0, false
		}
		return o.GetRequeueAfter().Seconds(), true
	})
	objectGauge(t, artifactSizeName, artifactSizeHelp, all, func(f facts) (float64, bool) {
		if a := artifactOf(f.obj); a != nil && a.Size != nil {
			return float64(*a.Size), true
		}
		return 0, false
	})
	objectGauge(t, artifactTimeName, artifactTimeHelp, all, func(f facts) (float64, bool) {
		if a := artifactOf(f.obj); a != nil {
			return seconds(a.LastUpdateTime.Time), true
		}
		return 0, false
	})
	objectGauge(t, heldSinceName, heldSinceHelp, all, func(f facts) (float64, bool) { return f.heldSince, f.heldSince > 0 })
	t.family(imageTagsName, imageTagsHelp, "gauge")
	for _, f := range all {
		if f.info.Tags != nil {
			t.sample(imageTagsName, []string{namespaceLabel, nameLabel}, []string{f.obj.GetNamespace(), f.obj.GetName()}, "", "", float64(*f.info.Tags))
		}
	}
	t.family(cachedName, cachedHelp, "gauge")
	for _, kind := range slices.Sorted(maps.Keys(counts)) {
		t.sample(cachedName, []string{kindLabel}, []string{kind}, "", "", float64(counts[kind]))
	}
}

// objectGauge writes the gauge family name of the objects for which value
// returns true.
func objectGauge(t *textWriter, name, help string, all []facts, value func(facts) (float64, bool)) {
	t.family(name, help, "gauge")
	for _, f := range all {
		if v, ok := value(f); ok {
			t.sample(name, objectLabels, []string{f.kind.Kind, f.obj.GetNamespace(), f.obj.GetName()}, "", "", v)
		}
	}
}

// artifactOf returns the artifact of a source, or nil.
func artifactOf(obj client.Object) *meta.Artifact {
	if o, ok := obj.(interface{ GetArtifact() *meta.Artifact }); ok {
		return o.GetArtifact()
	}
	return nil
}

// heldSinceOf returns since when a closed gate holds obj back, or 0.
func heldSinceOf(obj state.Object) float64 {
	if conditions.HeldByGate(obj, obj.GetGeneration()) == "" {
		return 0
	}
	for _, c := range []string{meta.ApprovedCondition, meta.BlockedCondition} {
		if got := conditions.Get(obj, c); got != nil && got.Reason == meta.GateClosedReason {
			return seconds(got.LastTransitionTime.Time)
		}
	}
	return 0
}

// seconds returns t in seconds since the epoch.
func seconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1000
}
