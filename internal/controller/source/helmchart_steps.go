package source

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// reconcileStorage checks that the artifact named in status is in storage
// (see artifactStore.reconcileStorage).
func (r *HelmChartReconciler) reconcileStorage(ctx context.Context, obj *sourcev1.HelmChart, sc *helmChartScope) (outcome.Result, error) {
	r.store().reconcileStorage(ctx, obj, &sc.storageCheck, func() { obj.Status.Artifact = nil })
	return outcome.ResultSuccess, nil
}

// reconcileSource finds the chart in the source: it pulls it from a
// HelmRepository, or gets the tree of a GitRepository's or Bucket's
// artifact. When the stored artifact already holds what the source gives
// for the spec, nothing more is done.
func (r *HelmChartReconciler) reconcileSource(ctx context.Context, obj *sourcev1.HelmChart, sc *helmChartScope) (outcome.Result, error) {
	if err := validateHelmChartSpec(obj); err != nil {
		return outcome.ResultEmpty, err
	}
	var err error
	switch obj.Spec.SourceRef.Kind {
	case sourcev1.HelmRepositoryKind:
		err = r.fromHelmRepository(ctx, obj, sc)
	default:
		err = r.fromSourceArtifact(ctx, obj, sc)
	}
	if err != nil {
		return outcome.ResultEmpty, err
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	if sc.upToDate {
		return outcome.ResultSuccess, nil
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason,
		"new chart from source revision '%s'", sc.sourceRevision)
	reconcile.MarkProgress(obj, "building artifact: new chart from source revision '%s'", sc.sourceRevision)
	return outcome.ResultSuccess, nil
}

// validateHelmChartSpec checks what the CRD schema cannot; what fails can
// never work, so it stalls.
func validateHelmChartSpec(obj *sourcev1.HelmChart) error {
	stall := func(reason, format string, args ...any) error {
		return fetchFailed(obj, reason, nil, outcome.Stall(reason, fmt.Errorf(format, args...)))
	}
	spec := obj.Spec
	switch spec.SourceRef.Kind {
	case sourcev1.HelmRepositoryKind:
		if _, err := semver.NewConstraint(obj.GetVersion()); err != nil {
			return stall(sourcev1.InvalidSemverReason, "invalid spec.version '%s': %v", spec.Version, err)
		}
		if spec.Chart == "" || strings.ContainsAny(spec.Chart, "/\\") || strings.HasPrefix(spec.Chart, ".") {
			return stall(sourcev1.InvalidSpecReason, "spec.chart '%s' must be the name of a chart in the HelmRepository", spec.Chart)
		}
	default:
		if served := kinds.Names(kinds.SourcesFor(kinds.HelmChartSource)); !slices.Contains(served, spec.SourceRef.Kind) {
			return stall(sourcev1.InvalidSpecReason, "spec.sourceRef.kind '%s' is not one of %s", spec.SourceRef.Kind, strings.Join(served, ", "))
		}
	}
	return nil
}

// getSource reads the source obj refers to into src; a source that does
// not exist yet is waited for.
func (r *HelmChartReconciler) getSource(ctx context.Context, obj *sourcev1.HelmChart, src sourceObject) error {
	ref := obj.Spec.SourceRef
	err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, src)
	switch {
	case apierrors.IsNotFound(err):
		return outcome.Wait(meta.DependencyNotReadyReason,
			fmt.Errorf("%s '%s/%s' not found", ref.Kind, obj.Namespace, ref.Name), r.sourceRequeue())
	case err != nil:
		return outcome.Fail(sourcev1.ChartPullFailedReason, fmt.Errorf("reading %s '%s': %w", ref.Kind, ref.Name, err))
	}
	return nil
}

// noArtifactYet is the wait for a source without an artifact.
func (r *HelmChartReconciler) noArtifactYet(obj *sourcev1.HelmChart) error {
	ref := obj.Spec.SourceRef
	return outcome.Wait(meta.DependencyNotReadyReason,
		fmt.Errorf("%s '%s/%s' has no artifact yet", ref.Kind, obj.Namespace, ref.Name), r.sourceRequeue())
}

// chartUpToDate reports whether the stored artifact is what the spec asks
// for: the same chart, values files and spec generation, at version
// (unless empty) and built from sourceRevision (unless empty).
func chartUpToDate(obj *sourcev1.HelmChart, version, sourceRevision string) bool {
	a, st := obj.GetArtifact(), obj.Status
	return a != nil &&
		(version == "" || a.Revision == version) &&
		(sourceRevision == "" || st.ObservedSourceArtifactRevision == sourceRevision) &&
		st.ObservedChartName == obj.Spec.Chart &&
		slices.Equal(st.ObservedValuesFiles, obj.Spec.ValuesFiles) &&
		st.ObservedGeneration == obj.Generation
}

// reconcileBuild turns what the source gave into the package to store: a
// pulled package is checked (loaded within the limits) and stored as it
// is, or with the values files merged into its values; a chart folder is
// loaded, its dependencies resolved, its values files merged and it is
// packaged with its version (plus the source revision under the Revision
// strategy). A panic in the Helm SDK fails this chart only.
func (r *HelmChartReconciler) reconcileBuild(ctx context.Context, obj *sourcev1.HelmChart, sc *helmChartScope) (outcome.Result, error) {
	if sc.upToDate {
		return outcome.ResultSuccess, nil
	}
	var err error
	if sc.downloaded != nil {
		err = chart.Safely(func() error { return r.buildPulled(obj, sc) })
	} else {
		// A chart built from a tree is what the HelmChart fetches: its
		// dependencies are downloaded as it builds.
		err = sc.fetch.time(func() error { return chart.Safely(func() error { return r.buildFromTree(ctx, obj, sc) }) })
	}
	if err != nil {
		return outcome.ResultEmpty, buildFailed(obj, err)
	}
	if strings.ContainsAny(sc.name, "/\\") || strings.HasPrefix(sc.name, ".") {
		return outcome.ResultEmpty, buildFailed(obj, fmt.Errorf("chart name '%s' is not a valid file name", sc.name))
	}
	conditions.Delete(obj, sourcev1.BuildFailedCondition)
	return outcome.ResultSuccess, nil
}

// buildPulled checks a pulled package and merges the values files.
func (r *HelmChartReconciler) buildPulled(obj *sourcev1.HelmChart, sc *helmChartScope) error {
	ch, err := chart.LoadArchive(sc.downloaded, r.ChartLimits)
	if err != nil {
		return fmt.Errorf("loading chart '%s' %s: %w", sc.name, sc.version, err)
	}
	if len(obj.Spec.ValuesFiles) == 0 {
		sc.pkg = sc.downloaded
		return nil
	}
	values, err := chart.MergeChartValuesFiles(ch, obj.Spec.ValuesFiles, obj.Spec.IgnoreMissingValuesFiles)
	if err != nil {
		return fmt.Errorf("merging the values files of chart '%s': %w", sc.name, err)
	}
	if sc.pkg, err = chart.Package(ch, "", values); err != nil {
		return fmt.Errorf("packaging chart '%s': %w", sc.name, err)
	}
	sc.packaged = true
	return nil
}

// reconcileArtifact stores the package as <chart>-<version>.tgz, with the
// version as its revision. When the stored artifact is up to date it only
// confirms it.
func (r *HelmChartReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.HelmChart, sc *helmChartScope) (outcome.Result, error) {
	if sc.upToDate && obj.GetArtifact() != nil {
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		obj.Status.URL = obj.Status.Artifact.URL
		obj.Status.ObservedSourceArtifactRevision = sc.sourceRevision
		return outcome.ResultSuccess, nil
	}
	a := r.Storage.NewArtifactFor(sourcev1.HelmChartKind, obj, sc.version, fmt.Sprintf("%s-%s.tgz", sc.name, sc.version))
	if err := r.store().copyBytes(obj, &a, sc.pkg); err != nil {
		return outcome.ResultEmpty, err
	}
	change := r.store().stored(ctx, obj, sc.storageCheck, a, func(a *meta.Artifact) { obj.Status.Artifact = a })
	obj.Status.URL = a.URL
	obj.Status.ObservedSourceArtifactRevision = sc.sourceRevision
	obj.Status.ObservedChartName = obj.Spec.Chart
	obj.Status.ObservedValuesFiles = slices.Clone(obj.Spec.ValuesFiles)
	reason, verb := sourcev1.ChartPullSucceededReason, "pulled"
	if sc.packaged {
		reason, verb = sourcev1.ChartPackageSucceededReason, "packaged"
	}
	r.store().announce(ctx, obj, change, reason, sc.version, fmt.Sprintf("%s '%s' chart with version '%s'", verb, sc.name, sc.version))
	return outcome.ResultSuccess, nil
}

// buildFailed marks a chart that could not be loaded or packaged.
func buildFailed(obj *sourcev1.HelmChart, err error) error {
	conditions.MarkTrue(obj, sourcev1.BuildFailedCondition, sourcev1.ChartPackageFailedReason, "%s", err.Error())
	return outcome.Fail(sourcev1.ChartPackageFailedReason, err)
}

// chartPullFailed records a failure to pull a chart or read its source
// (see fetchFailed).
func chartPullFailed(obj *sourcev1.HelmChart, denied, err error) error {
	return fetchFailed(obj, sourcev1.ChartPullFailedReason, denied, err)
}
