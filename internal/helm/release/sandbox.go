package release

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmrelease "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/windlass-dev/windlass/internal/helm/sandbox"
)

// WithSandbox renders charts in s's child processes, bounded in memory,
// output and time, before an action applies what they rendered: a chart
// written to exhaust the process ends its own action with an error.
// Without it, charts render in the calling process.
func WithSandbox(s *sandbox.Renderer) Option {
	return func(r *Runner) { r.sandbox = s }
}

// prerendered is the chart an action is to render, and what gives the
// stored release the chart's own templates back.
type prerendered struct {
	chart     *chart.Chart
	originals *sandbox.Originals
}

// prerender renders ch with values in the Runner's sandbox, as the action
// about to run would render it, and returns the chart of literal
// templates that the action is to render instead. Without a sandbox it
// returns ch. ch must be the action's own copy. The templates may take
// timeout (the action's) to render, counted from when the render process
// has the chart: neither the wait for a turn nor the process's start,
// which no chart decides, is charged to it; ctx's end ends the render.
func (r *Runner) prerender(ctx context.Context, ch *chart.Chart, values map[string]any, rel common.ReleaseOptions,
	caps *common.Capabilities, lookup bool, timeout time.Duration) (prerendered, error) {
	if r.sandbox == nil {
		return prerendered{chart: ch}, nil
	}
	req := sandbox.Request{Chart: ch, Values: values, Release: rel, Capabilities: caps, Timeout: timeout}
	if lookup && r.getter != nil {
		req.Lookup = r.lookup(ctx, r.sandbox.Limits().Output)
	}
	rendered, err := r.sandbox.Render(ctx, req)
	if err != nil {
		return prerendered{}, fmt.Errorf("rendering the chart: %w", err)
	}
	lit, originals := sandbox.Literal(ch, rendered)
	return prerendered{chart: lit, originals: originals}, nil
}

// keepOriginals makes cfg store the action's release with the chart's own
// templates, and returns the function that does the same for the release
// the action returns.
func (p prerendered) keepOriginals(cfg *action.Configuration) func(*releasev1.Release) *releasev1.Release {
	if p.originals == nil {
		return func(rel *releasev1.Release) *releasev1.Release { return rel }
	}
	cfg.Releases.Driver = &restoringDriver{Driver: cfg.Releases.Driver, literal: p.chart, originals: p.originals}
	return func(rel *releasev1.Release) *releasev1.Release {
		if rel == nil || rel.Chart != p.chart {
			return rel
		}
		out := *rel
		out.Chart = p.originals.Restore(rel.Chart)
		return &out
	}
}

// restoringDriver stores the release whose chart is literal with the
// chart's own templates: what the helm CLI would have stored.
type restoringDriver struct {
	driver.Driver
	literal   *chart.Chart
	originals *sandbox.Originals
}

// Create stores rls.
func (d *restoringDriver) Create(key string, rls helmrelease.Releaser) error {
	return d.Driver.Create(key, d.restore(rls))
}

// Update stores rls over its stored version.
func (d *restoringDriver) Update(key string, rls helmrelease.Releaser) error {
	return d.Driver.Update(key, d.restore(rls))
}

// restore returns rls with the chart's own templates when its chart is
// the literal one.
func (d *restoringDriver) restore(rls helmrelease.Releaser) helmrelease.Releaser {
	rel, ok := rls.(*releasev1.Release)
	if !ok || rel.Chart != d.literal {
		return rls
	}
	out := *rel
	out.Chart = d.originals.Restore(rel.Chart)
	return &out
}

// prerenderUpgrade prerenders the upgrade of last to ch with values.
func (r *Runner) prerenderUpgrade(ctx context.Context, last *releasev1.Release, ch *chart.Chart, values map[string]any, preserve bool,
	caps *common.Capabilities, timeout time.Duration) (prerendered, error) {
	if r.sandbox == nil {
		return prerendered{chart: ch}, nil
	}
	renderChart, renderValues, err := r.upgradeValues(last, ch, values, preserve)
	if err != nil {
		return prerendered{}, err
	}
	rel := common.ReleaseOptions{Name: last.Name, Namespace: last.Namespace, Revision: last.Version + 1, IsUpgrade: true}
	return r.prerender(ctx, renderChart, renderValues, rel, caps, true, timeout)
}

// upgradeValues returns the chart and values that an upgrade of last
// renders: with preserve, as the SDK reuses values, the values are merged
// over those of the release it upgrades and the chart's defaults are that
// release's; otherwise they are ch's and values.
func (r *Runner) upgradeValues(last *releasev1.Release, ch *chart.Chart, values map[string]any, preserve bool) (*chart.Chart, map[string]any, error) {
	if !preserve {
		return ch, values, nil
	}
	current, err := r.upgradedRelease(last)
	if err != nil {
		return nil, nil, err
	}
	old, err := util.CoalesceValues(current.Chart, current.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("rebuilding the values of release %s v%d: %w", current.Name, current.Version, err)
	}
	withOld := *ch
	withOld.Values = old
	return &withOld, util.CoalesceTables(copyValues(values), copyValues(current.Config)), nil
}

// upgradedRelease returns the release that an upgrade of last starts
// from, as the SDK picks it: last when deployed, else the deployed one,
// else last when it failed or was superseded.
func (r *Runner) upgradedRelease(last *releasev1.Release) (*releasev1.Release, error) {
	if last.Info.Status == rcommon.StatusDeployed {
		return last, nil
	}
	hist, err := r.History(last.Name, 0)
	if err != nil {
		return nil, err
	}
	for _, rel := range hist {
		if rel.Info.Status == rcommon.StatusDeployed {
			return rel, nil
		}
	}
	return last, nil
}

// lookup returns the lookup function of the templates: it reads as the
// Runner's identity, through its shared clients, and refuses a list
// larger than maxBytes.
func (r *Runner) lookup(ctx context.Context, maxBytes int64) sandbox.LookupFunc {
	return func(apiVersion, kind, namespace, name string) (map[string]any, error) {
		gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
		mapping, err := r.getter.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return map[string]any{}, fmt.Errorf("lookup %s %s: %w", apiVersion, kind, err)
		}
		var client dynamic.ResourceInterface = r.getter.dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
			client = r.getter.dynamic.Resource(mapping.Resource).Namespace(namespace)
		}
		if name != "" {
			obj, err := client.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return map[string]any{}, nil
			}
			if err != nil {
				return map[string]any{}, err
			}
			return obj.UnstructuredContent(), nil
		}
		return r.lookupList(ctx, client, apiVersion, kind, maxBytes)
	}
}

// lookupPage is how many objects a lookup lists per request.
const lookupPage = 250

// lookupList lists the objects of client, a page at a time, as Helm's
// lookup returns a list, and refuses them once they pass maxBytes.
func (r *Runner) lookupList(ctx context.Context, client dynamic.ResourceInterface, apiVersion, kind string, maxBytes int64) (map[string]any, error) {
	var all *unstructured.UnstructuredList
	var size int64
	opts := metav1.ListOptions{Limit: lookupPage}
	for {
		page, err := client.List(ctx, opts)
		if apierrors.IsNotFound(err) {
			return map[string]any{}, nil
		}
		if err != nil {
			return map[string]any{}, err
		}
		data, err := page.MarshalJSON()
		if err != nil {
			return map[string]any{}, err
		}
		if size += int64(len(data)); size > maxBytes {
			return map[string]any{}, fmt.Errorf("lookup %s %s: the list is larger than %d MiB", apiVersion, kind, maxBytes>>20)
		}
		if all == nil {
			all = page
		} else {
			all.Items = append(all.Items, page.Items...)
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			all.SetContinue("")
			return all.UnstructuredContent(), nil
		}
	}
}
