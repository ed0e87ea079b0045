package helm

import (
	"context"
	"errors"
	"fmt"

	hchart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/fetch"
	chartload "github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// chartSources are the kinds a release's chart comes from: the HelmChart
// made from spec.chart, or the source of spec.chartRef.
func chartSources() sourceref.Kinds {
	return sourceref.For(kinds.ChartRef)
}

// chartRef returns the source of obj's chart: spec.chartRef, or the
// HelmChart made from spec.chart in its source's namespace.
func chartRef(obj *helmv2.HelmRelease) sourceref.Ref {
	if ref := obj.Spec.ChartRef; ref != nil {
		return sourceref.Ref{Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace}
	}
	return sourceref.Ref{Kind: sourcev1.HelmChartKind, Name: obj.GetHelmChartName(), Namespace: templateNamespace(obj)}
}

// templateNamespace returns the namespace of the HelmChart made from
// spec.chart: its source's.
func templateNamespace(obj *helmv2.HelmRelease) string {
	if obj.Spec.Chart != nil && obj.Spec.Chart.Spec.SourceRef.Namespace != "" {
		return obj.Spec.Chart.Spec.SourceRef.Namespace
	}
	return obj.Namespace
}

// reconcileChartTemplate creates or updates the HelmChart of spec.chart,
// and records it in status.helmChart. A release with spec.chartRef has
// none: a HelmChart left from a former spec.chart is deleted. A HelmChart
// it creates is waited for (quietly: see outcome.Waiting.Quiet).
func (r *HelmReleaseReconciler) reconcileChartTemplate(ctx context.Context, obj *helmv2.HelmRelease) error {
	if obj.Spec.Chart == nil {
		if err := r.deleteChartTemplate(ctx, obj); err != nil {
			return outcome.Fail(helmv2.ArtifactFailedReason, err)
		}
		return nil
	}
	ns := templateNamespace(obj)
	if r.NoCrossNamespaceRefs && ns != obj.Namespace {
		return outcome.Stall(meta.AccessDeniedReason,
			fmt.Errorf("cross-namespace reference to %s '%s/%s' is not allowed", obj.Spec.Chart.Spec.SourceRef.Kind, ns,
				obj.Spec.Chart.Spec.SourceRef.Name))
	}
	hc := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: obj.GetHelmChartName()}}
	want := chartSpec(obj)
	err := r.Get(ctx, client.ObjectKeyFromObject(hc), hc)
	switch {
	case apierrors.IsNotFound(err):
		setTemplateMeta(hc, obj)
		hc.Spec = want
		if err := r.Create(ctx, hc); err != nil {
			return outcome.Fail(helmv2.ArtifactFailedReason, fmt.Errorf("creating HelmChart '%s/%s': %w", ns, hc.Name, err))
		}
		// Just made, it fetches its first artifact (and the cache may not
		// hold it yet): its artifact starts the next run.
		obj.Status.HelmChart = ns + "/" + hc.Name
		return outcome.WaitQuietly(meta.ArtifactFailedReason,
			fmt.Errorf("source %s '%s/%s' has no artifact yet", sourcev1.HelmChartKind, ns, hc.Name), r.DependencyRequeue)
	case err != nil:
		return outcome.Fail(helmv2.ArtifactFailedReason, err)
	case !madeFor(hc, obj):
		return outcome.Fail(helmv2.ArtifactFailedReason, fmt.Errorf(
			"HelmChart '%s/%s' is %s, not this HelmRelease's: the HelmChart of a chart template is named <namespace>-<name>, "+
				"so rename one of the two HelmReleases, or use spec.chartRef", ns, hc.Name, ownerOf(hc)))
	case !equalChartSpecs(hc.Spec, want) || !templateMetaCurrent(hc, obj):
		patch := client.MergeFrom(hc.DeepCopy())
		setTemplateMeta(hc, obj)
		hc.Spec = want
		if err := r.Patch(ctx, hc, patch); err != nil {
			return outcome.Fail(helmv2.ArtifactFailedReason, fmt.Errorf("updating HelmChart '%s/%s': %w", ns, hc.Name, err))
		}
	}
	obj.Status.HelmChart = ns + "/" + hc.Name
	return nil
}

// deleteChartTemplate deletes the HelmChart recorded in status.helmChart
// or, when none is recorded yet (its first run waited for the chart
// without writing its status), the one that spec.chart makes.
func (r *HelmReleaseReconciler) deleteChartTemplate(ctx context.Context, obj *helmv2.HelmRelease) error {
	key := obj.Status.HelmChart
	if key == "" && obj.Spec.Chart != nil {
		key = templateNamespace(obj) + "/" + obj.GetHelmChartName()
	}
	if key == "" {
		return nil
	}
	ns, name, ok := splitKey(key)
	if !ok {
		obj.Status.HelmChart = ""
		return nil
	}
	hc := &sourcev1.HelmChart{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hc)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading HelmChart '%s': %w", key, err)
	}
	if err == nil && madeFor(hc, obj) {
		// Deleted only as the version read, which is this release's.
		pre := client.Preconditions{UID: &hc.UID, ResourceVersion: &hc.ResourceVersion}
		if err := r.Delete(ctx, hc, pre); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting HelmChart '%s': %w", key, err)
		}
	}
	obj.Status.HelmChart = ""
	return nil
}

// madeFor says whether hc is the HelmChart of obj's chart template, by
// its owner labels.
func madeFor(hc *sourcev1.HelmChart, obj *helmv2.HelmRelease) bool {
	return hc.Labels[templateOwnerName] == obj.Name && hc.Labels[templateOwnerNamespace] == obj.Namespace
}

// ownerOf names the owner of hc, for messages.
func ownerOf(hc *sourcev1.HelmChart) string {
	name, ns := hc.Labels[templateOwnerName], hc.Labels[templateOwnerNamespace]
	if name == "" || ns == "" {
		return "not made from a HelmRelease's chart template"
	}
	return fmt.Sprintf("HelmRelease '%s/%s''s", ns, name)
}

// Labels on a HelmChart made from a release's template: whose it is.
const (
	templateOwnerName      = "helm.toolkit.fluxcd.io/name"
	templateOwnerNamespace = "helm.toolkit.fluxcd.io/namespace"
)

// shardLabel is the label that shards the objects between controllers
// (their --watch-label-selector).
const shardLabel = "sharding.fluxcd.io/key"

// setTemplateMeta sets the labels and annotations of a HelmChart made from
// obj's template, and the owner labels. The chart takes obj's shard label,
// unless the template sets its own, so that the shard that reconciles obj
// sees the chart too.
func setTemplateMeta(hc *sourcev1.HelmChart, obj *helmv2.HelmRelease) {
	labels := map[string]string{}
	if shard, ok := obj.Labels[shardLabel]; ok {
		labels[shardLabel] = shard
	}
	var annotations map[string]string
	if m := obj.Spec.Chart.ObjectMeta; m != nil {
		for k, v := range m.Labels {
			labels[k] = v
		}
		annotations = m.Annotations
	}
	// Set last: a template cannot claim another release's chart.
	labels[templateOwnerName], labels[templateOwnerNamespace] = obj.Name, obj.Namespace
	hc.Labels = labels
	hc.Annotations = annotations
}

func templateMetaCurrent(hc *sourcev1.HelmChart, obj *helmv2.HelmRelease) bool {
	want := &sourcev1.HelmChart{}
	setTemplateMeta(want, obj)
	return equalMaps(hc.Labels, want.Labels) && equalMaps(hc.Annotations, want.Annotations)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// chartSpec returns the spec of the HelmChart of obj's template.
func chartSpec(obj *helmv2.HelmRelease) sourcev1.HelmChartSpec {
	t := obj.Spec.Chart.Spec
	spec := sourcev1.HelmChartSpec{
		Chart:                    t.Chart,
		Version:                  t.Version,
		SourceRef:                sourcev1.LocalHelmChartSourceReference{Kind: t.SourceRef.Kind, Name: t.SourceRef.Name},
		Interval:                 obj.Spec.Interval,
		ReconcileStrategy:        t.ReconcileStrategy,
		ValuesFiles:              t.ValuesFiles,
		IgnoreMissingValuesFiles: t.IgnoreMissingValuesFiles,
		Suspend:                  false,
	}
	if spec.Version == "" {
		spec.Version = "*"
	}
	if spec.ReconcileStrategy == "" {
		spec.ReconcileStrategy = sourcev1.ReconcileStrategyChartVersion
	}
	if t.Interval != nil {
		spec.Interval = *t.Interval
	}
	if v := t.Verify; v != nil {
		spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: v.Provider, SecretRef: v.SecretRef}
		if spec.Verify.Provider == "" {
			spec.Verify.Provider = sourcev1.VerificationProviderCosign
		}
	}
	return spec
}

func equalChartSpecs(a, b sourcev1.HelmChartSpec) bool {
	return equality.Semantic.DeepEqual(a, b)
}

func splitKey(key string) (namespace, name string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], i > 0 && i < len(key)-1
		}
	}
	return "", "", false
}

// getChartSource returns the source of obj's chart, with an artifact (see
// sourceref.Resolver.Get).
func (r *HelmReleaseReconciler) getChartSource(ctx context.Context, obj *helmv2.HelmRelease) (sourceref.Source, error) {
	resolver := sourceref.Resolver{
		Client: r.Client, Kinds: chartSources(), NoCrossNamespaceRefs: r.NoCrossNamespaceRefs, Requeue: r.DependencyRequeue,
		StoredAgainHere: r.StoredAgainHere,
	}
	return resolver.Get(ctx, obj.Namespace, chartRef(obj))
}

// loadChart returns the chart of the source's artifact, loaded once per
// digest while the bounded cache keeps it (loadedCharts). The loaded chart
// is shared: callers must not change it.
func (r *HelmReleaseReconciler) loadChart(ctx context.Context, source sourceref.Source) (*hchart.Chart, error) {
	a := source.GetArtifact()
	ch := r.charts.get(a.Digest)
	if ch == nil {
		var err error
		if ch, err = r.readChart(ctx, a); err != nil {
			return nil, err
		}
		r.charts.put(a.Digest, ch)
	}
	switch source.(type) {
	case *sourcev1.OCIRepository, *sourcev1.ExternalArtifact:
		// The chart's version alone does not tell a new artifact.
		ch = chartload.WithDigestVersion(ch, a.Digest)
	}
	return ch, nil
}

// readChart reads and loads the chart of artifact a.
func (r *HelmReleaseReconciler) readChart(ctx context.Context, a *meta.Artifact) (*hchart.Chart, error) {
	data, err := r.ChartReader.ReadAll(ctx, *a, r.maxChartSize())
	switch {
	case errors.Is(err, fetch.ErrNotFound):
		return nil, outcome.Wait(helmv2.ArtifactFailedReason,
			fmt.Errorf("artifact for revision '%s' is gone from storage, waiting for the source's next artifact", a.Revision), r.DependencyRequeue)
	case err != nil:
		return nil, outcome.Fail(helmv2.ArtifactFailedReason, fmt.Errorf("reading the chart of revision '%s': %w", a.Revision, err))
	}
	var ch *hchart.Chart
	err = chartload.Safely(func() error {
		var err error
		ch, err = chartload.LoadArchive(data, chartload.Limits{})
		return err
	})
	if err != nil {
		return nil, outcome.Fail(helmv2.ArtifactFailedReason, fmt.Errorf("loading the chart of revision '%s': %w", a.Revision, err))
	}
	return ch, nil
}

// maxChartSize returns the bound of a packaged chart.
func (r *HelmReleaseReconciler) maxChartSize() int64 {
	if r.MaxChartSize > 0 {
		return r.MaxChartSize
	}
	return DefaultMaxChartSize
}
