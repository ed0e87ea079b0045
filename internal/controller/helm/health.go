package helm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/health"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// healthRecheck is how soon the health of custom resources is checked
// again while they progress.
const healthRecheck = 5 * time.Second

// reconcileHealth judges the release's custom resources that
// spec.healthCheckExprs select with those expressions (Helm's own wait
// knows only the built-in kinds): one Failed fails the run, one still in
// progress makes it progress and be checked again soon.
func (r *HelmReleaseReconciler) reconcileHealth(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (outcome.Result, error) {
	if len(obj.Spec.HealthCheckExprs) == 0 || sc.last == nil {
		return outcome.ResultSuccess, nil
	}
	exprs, err := kspec.HealthExprs(obj.Spec.HealthCheckExprs)
	if err != nil {
		return outcome.ResultEmpty, outcome.Stall(meta.InvalidCELExpressionReason, err)
	}
	objs, err := releaseObjects(sc)
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(helmv2.InventoryBuildFailedReason, err)
	}
	refs := selectedRefs(objs, obj.Spec.HealthCheckExprs)
	if len(refs) == 0 {
		return outcome.ResultSuccess, nil
	}
	result, err := health.NewChecker(sc.target.Client, sc.target.Mapper).Check(ctx, refs, exprs...)
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(helmv2.HealthCheckFailedReason, err)
	}
	if failed := result.Failed(); len(failed) > 0 {
		return outcome.ResultEmpty, outcome.Fail(helmv2.HealthCheckFailedReason,
			fmt.Errorf("health check failed: %s", joinStatuses(failed)))
	}
	if pending := result.NotReady(); len(pending) > 0 {
		return outcome.ResultEmpty, outcome.Progress(meta.ProgressingReason,
			fmt.Errorf("waiting for: %s", joinStatuses(pending)), healthRecheck)
	}
	return outcome.ResultSuccess, nil
}

// selectedRefs returns the objects whose group (and kind, when given) one
// of checks names.
func selectedRefs(objs []*unstructured.Unstructured, checks []kustomizev1.CustomHealthCheck) []health.ObjectRef {
	var refs []health.ObjectRef
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		for _, c := range checks {
			group, _, found := strings.Cut(c.APIVersion, "/")
			if !found {
				group = "" // "v1": the core group
			}
			if group == gvk.Group && (c.Kind == "" || c.Kind == gvk.Kind) {
				refs = append(refs, health.ObjectRef{APIVersion: o.GetAPIVersion(), Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})
				break
			}
		}
	}
	return refs
}

func joinStatuses(statuses []health.ObjectStatus) string {
	out := make([]string, 0, len(statuses))
	for _, s := range statuses {
		out = append(out, s.String())
	}
	return strings.Join(out, "; ")
}
