package helm

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/helm/drift"
	"github.com/windlass-dev/windlass/internal/helm/postrender"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/helm/values"
	"github.com/windlass-dev/windlass/internal/plan"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// previewTimeout bounds a preview when the HelmRelease's spec.timeout is
// longer.
const previewTimeout = time.Minute

// Preview renders the chart of the HelmRelease key's source with its
// values, as the next upgrade would, and asks the API server, with a
// server-side dry-run apply as the release's identity, what installing it
// would change: each object created or drifted, and each object of the
// last release that the upgrade would delete. Nothing is written, neither
// a release nor the status; Secret values are masked in the diffs. Hooks
// and tests are not run, and what a chart's lookup function would read is
// read as the release's identity.
func (r *HelmReleaseReconciler) Preview(ctx context.Context, key types.NamespacedName) (*plan.Preview, error) {
	obj := &helmv2.HelmRelease{}
	if err := r.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, min(obj.GetTimeout(), previewTimeout))
	defer cancel()
	source, err := r.getChartSource(ctx, obj)
	if err != nil {
		return nil, err
	}
	chart, err := r.loadChart(ctx, source)
	if err != nil {
		return nil, err
	}
	reader, err := r.valuesReader(ctx, obj)
	if err != nil {
		return nil, err
	}
	vals, err := values.Compose(ctx, reader, obj)
	if err != nil {
		return nil, err
	}
	t, err := r.target(ctx, obj)
	if err != nil {
		return nil, err
	}
	run, err := r.runners.get(t, obj.GetStorageNamespace(), r.local(obj))
	if err != nil {
		return nil, fmt.Errorf("preparing the Helm client: %w", err)
	}
	pr, err := postrender.New(obj)
	if err != nil {
		return nil, fmt.Errorf("invalid post-renderers: %w", err)
	}
	manifest, _, err := run.Render(ctx, chart, vals, helmaction.RenderOptions{
		ReleaseName: obj.GetReleaseName(), Namespace: obj.GetReleaseNamespace(), PostRenderer: pr})
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	objs, err := manifestObjects(manifest, obj.GetReleaseNamespace(), t.Mapper)
	if err != nil {
		return nil, fmt.Errorf("reading the rendered manifest: %w", err)
	}
	drift.SetReleaseMetadata(objs, obj.GetReleaseName(), obj.GetReleaseNamespace())
	m, err := ssa.New(t.Client, t.Mapper, ssa.Options{FieldManager: helmaction.FieldManager, Owner: drift.Owner(obj)})
	if err != nil {
		return nil, err
	}
	planned, err := m.Plan(ctx, objs, ssa.ApplyOptions{Force: true})
	if err != nil {
		return nil, fmt.Errorf("the dry-run apply failed: %w", err)
	}
	changes, err := plan.Changes(planned)
	if err != nil {
		return nil, err
	}
	deleted, err := plan.Deletions(ctx, t.Client, drift.Inventory(obj), planned, helmv2.HelmReleaseKind, drift.DeletedByUpgrade)
	if err != nil {
		return nil, err
	}
	revision := chart.Metadata.Name + " " + chart.Metadata.Version
	return &plan.Preview{Revision: revision, Changes: append(changes, deleted...), Objects: len(objs)}, nil
}
