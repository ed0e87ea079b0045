package metrics

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/state"
)

// The series read from the cache at each scrape, about every object of
// the kinds served (see Resources).
var (
	// resourceInfo is gotk_resource_info, with the labels the reference's
	// kube-state-metrics configuration gives it, plus reason, state and
	// kind (the kind of the windlass_* series, to join them).
	resourceInfo = prometheus.NewDesc("gotk_resource_info",
		"The current state of a GitOps Toolkit resource: its kind, readiness, suspension, revision and source.",
		[]string{"customresource_group", "customresource_version", "customresource_kind", kindLabel, namespaceLabel, nameLabel,
			"ready", "reason", "state", "suspended", "revision", "source_name", "url", "chart_name"}, nil)
	readySince = prometheus.NewDesc("windlass_resource_ready_transition_timestamp_seconds",
		"When the object's Ready condition last changed status, in seconds since the epoch.", objectLabels, nil)
	interval = prometheus.NewDesc("windlass_resource_interval_seconds",
		"The object's spec.interval, in seconds.", objectLabels, nil)
	artifactSize = prometheus.NewDesc("windlass_artifact_size_bytes",
		"The size of the artifact a source publishes, in bytes.", objectLabels, nil)
	artifactUpdated = prometheus.NewDesc("windlass_artifact_last_update_timestamp_seconds",
		"When the source's artifact last changed revision, in seconds since the epoch.", objectLabels, nil)
	heldSince = prometheus.NewDesc("windlass_gate_held_since_timestamp_seconds",
		"Since when a closed gate holds the object back, in seconds since the epoch.", objectLabels, nil)
	imageTags = prometheus.NewDesc("windlass_image_repository_tags",
		"The tags an ImageRepository's last scan kept.", []string{namespaceLabel, nameLabel}, nil)
	cachedObjects = prometheus.NewDesc("windlass_cache_objects",
		"The objects of each kind the controller holds in its cache.", []string{kindLabel}, nil)
)

// listTimeout bounds a scrape's reading of the cache.
const listTimeout = 10 * time.Second

// resources is the collector of the series about each object, read from
// the caches of the managers that Serve registered.
type resources struct {
	mu      sync.Mutex
	sources map[*resourceSource]struct{}
}

// resourceSource is one manager's cache and the kinds it serves.
type resourceSource struct {
	reader client.Reader
	kinds  []kinds.Kind
}

// Resources is the collector of the series about every object of the
// served kinds, registered with controller-runtime's registry.
var Resources = &resources{sources: map[*resourceSource]struct{}{}}

func init() {
	crmetrics.Registry.MustRegister(Resources)
}

// Serve reports the objects of ks that reader (a manager's cache) holds,
// until ctx is done: called by the elected manager only, so that a
// standby replica reports nothing twice.
func (r *resources) Serve(ctx context.Context, reader client.Reader, ks []kinds.Kind) {
	src := &resourceSource{reader: reader, kinds: ks}
	r.mu.Lock()
	r.sources[src] = struct{}{}
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	delete(r.sources, src)
	r.mu.Unlock()
}

// Describe sends the descriptions of the series.
func (r *resources) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{resourceInfo, readySince, interval, artifactSize, artifactUpdated, heldSince, imageTags, cachedObjects} {
		ch <- d
	}
}

// Collect sends the series of every object the sources hold.
func (r *resources) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	sources := make([]*resourceSource, 0, len(r.sources))
	for s := range r.sources {
		sources = append(sources, s)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	for _, s := range sources {
		for _, k := range s.kinds {
			list := k.NewList()
			// Read only: the series are made of copies of strings.
			if err := s.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
				continue
			}
			items := k.Items(list)
			ch <- prometheus.MustNewConstMetric(cachedObjects, prometheus.GaugeValue, float64(len(items)), k.Kind)
			for _, obj := range items {
				collectObject(ch, k, obj)
			}
		}
	}
}

// collectObject sends the series of obj, of kind k.
func collectObject(ch chan<- prometheus.Metric, k kinds.Kind, obj client.Object) {
	ns, name := obj.GetNamespace(), obj.GetName()
	var info kinds.Info
	if k.Info != nil {
		info = k.Info(obj)
	}
	ready, reason, st, suspended := "", "", "", ""
	if o, ok := obj.(state.Object); ok {
		st, suspended = string(state.Of(o, k.Static)), strconv.FormatBool(o.IsSuspended())
		if c := conditions.Get(o, meta.ReadyCondition); c != nil {
			ready, reason = string(c.Status), c.Reason
			ch <- gauge(readySince, seconds(c.LastTransitionTime), k.Kind, ns, name)
		}
		if since, held := heldSinceOf(o); held {
			ch <- gauge(heldSince, since, k.Kind, ns, name)
		}
	}
	gv := k.GroupVersion
	ch <- prometheus.MustNewConstMetric(resourceInfo, prometheus.GaugeValue, 1, gv.Group, gv.Version, k.Kind, k.Kind, ns, name,
		ready, reason, st, suspended, info.Revision, info.Source, info.URL, info.Chart)
	if o, ok := obj.(interface{ GetRequeueAfter() time.Duration }); ok && !k.Static {
		ch <- gauge(interval, o.GetRequeueAfter().Seconds(), k.Kind, ns, name)
	}
	if o, ok := obj.(interface{ GetArtifact() *meta.Artifact }); ok {
		if a := o.GetArtifact(); a != nil {
			if a.Size != nil {
				ch <- gauge(artifactSize, float64(*a.Size), k.Kind, ns, name)
			}
			ch <- gauge(artifactUpdated, seconds(a.LastUpdateTime), k.Kind, ns, name)
		}
	}
	if info.Tags != nil {
		ch <- gauge(imageTags, float64(*info.Tags), ns, name)
	}
}

// heldSinceOf returns since when a closed gate holds obj back, if one does.
func heldSinceOf(obj state.Object) (float64, bool) {
	for _, c := range []string{meta.ApprovedCondition, meta.BlockedCondition} {
		if got := conditions.Get(obj, c); got != nil && got.Reason == meta.GateClosedReason &&
			conditions.HeldByGate(obj, obj.GetGeneration()) != "" {
			return seconds(got.LastTransitionTime), true
		}
	}
	return 0, false
}

// gauge returns a gauge sample of desc.
func gauge(desc *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
}

// seconds returns t in seconds since the epoch.
func seconds(t metav1.Time) float64 {
	return float64(t.UnixMilli()) / 1000
}
