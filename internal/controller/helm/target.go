package helm

import (
	"context"
	"errors"
	"fmt"

	hrelease "helm.sh/helm/v4/pkg/release/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/helm/postrender"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/helm/values"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// reconcileValues composes the release's values from spec.valuesFrom and
// spec.values. The ConfigMaps and Secrets of valuesFrom are read as the
// release's identity (valuesReader): a tenant's release renders only what
// its service account may read.
func (r *HelmReleaseReconciler) reconcileValues(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (outcome.Result, error) {
	reader, err := r.valuesReader(ctx, obj)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	vals, err := values.Compose(ctx, reader, obj)
	if err != nil {
		switch {
		case values.IsNotFound(err):
			return outcome.ResultEmpty, outcome.Wait(helmv2.InitFailedReason, err, r.DependencyRequeue)
		case values.IsInvalid(err):
			return outcome.ResultEmpty, outcome.Stall(helmv2.InitFailedReason, err)
		}
		return outcome.ResultEmpty, outcome.Fail(helmv2.InitFailedReason, err)
	}
	sc.values, sc.configDigest = vals, helmaction.ConfigDigest(vals)
	return outcome.ResultSuccess, nil
}

// valuesReader returns what reads obj's valuesFrom, in the management
// cluster (where they live, whatever spec.kubeConfig says): the manager's
// cached client when the release impersonates no service account, else an
// uncached client that acts as that service account (spec.serviceAccountName,
// or --default-service-account).
func (r *HelmReleaseReconciler) valuesReader(ctx context.Context, obj *helmv2.HelmRelease) (client.Reader, error) {
	if len(obj.Spec.ValuesFrom) == 0 || (obj.Spec.ServiceAccountName == "" && (r.Targets == nil || r.Targets.DefaultServiceAccount == "")) {
		return r.Client, nil
	}
	t, err := r.Targets.For(ctx, impersonation.Identity{Namespace: obj.Namespace, ServiceAccountName: obj.Spec.ServiceAccountName}, r.Client)
	if err != nil {
		return nil, outcome.Fail(helmv2.InitFailedReason, err)
	}
	return t.Client, nil
}

// reconcileTarget resolves the cluster and identity of the release, its
// runner and its post-renderer.
func (r *HelmReleaseReconciler) reconcileTarget(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (outcome.Result, error) {
	t, err := r.target(ctx, obj)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	if err := r.uninstallMoved(ctx, obj, t); err != nil {
		return outcome.ResultEmpty, err
	}
	run, err := r.runners.get(t, obj.GetStorageNamespace(), r.local(obj))
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(helmv2.InitFailedReason, fmt.Errorf("preparing the Helm client: %w", err))
	}
	pr, err := postrender.New(obj)
	if err != nil {
		return outcome.ResultEmpty, outcome.Stall(helmv2.InitFailedReason, fmt.Errorf("invalid post-renderers: %w", err))
	}
	sc.runner, sc.postRenderer = run, pr
	sc.target = t
	obj.Status.StorageNamespace = obj.GetStorageNamespace()
	return outcome.ResultSuccess, nil
}

// target returns where and as whom obj's release is made.
func (r *HelmReleaseReconciler) target(ctx context.Context, obj *helmv2.HelmRelease) (*impersonation.Target, error) {
	t, err := r.Targets.For(ctx, impersonation.Identity{
		Namespace: obj.Namespace, ServiceAccountName: obj.Spec.ServiceAccountName, KubeConfig: obj.Spec.KubeConfig,
	}, r.Client)
	switch {
	case errors.Is(err, impersonation.ErrUnservedKubeConfig):
		return nil, outcome.Stall(meta.UnsupportedKubeConfigReason, err)
	case errors.Is(err, impersonation.ErrInvalidKubeConfig):
		return nil, outcome.Stall(helmv2.InitFailedReason, err)
	case err != nil:
		return nil, outcome.Fail(helmv2.InitFailedReason, err)
	}
	return t, nil
}

// uninstallMoved uninstalls the release that obj made under another name
// or storage namespace, when spec.releaseName, spec.targetNamespace or
// spec.storageNamespace changed.
func (r *HelmReleaseReconciler) uninstallMoved(ctx context.Context, obj *helmv2.HelmRelease, t *impersonation.Target) error {
	latest := obj.Status.History.Latest()
	storage := obj.Status.StorageNamespace
	if latest == nil || storage == "" {
		return nil
	}
	if latest.Name == obj.GetReleaseName() && latest.Namespace == obj.GetReleaseNamespace() && storage == obj.GetStorageNamespace() {
		return nil
	}
	run, err := r.runners.get(t, storage, r.local(obj))
	if err != nil {
		return outcome.Fail(helmv2.InitFailedReason, err)
	}
	_, err = helmAction(actionUninstall, func() (*hrelease.Release, error) {
		return run.Uninstall(ctx, latest.Name, helmaction.UninstallOptions{Timeout: obj.GetTimeout()})
	})
	if err != nil {
		return outcome.Fail(helmv2.UninstallFailedReason,
			fmt.Errorf("uninstalling the former release %s/%s: %w", latest.Namespace, latest.Name, err))
	}
	obj.Status.History = nil
	return nil
}

// recordRelease records the release's history and inventory, as they are
// in storage after the run.
func (r *HelmReleaseReconciler) recordRelease(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) error {
	if sc.runner == nil {
		return nil
	}
	if sc.last == nil {
		obj.Status.Inventory = nil
		return nil
	}
	latest := obj.Status.History.Latest()
	switch {
	case sc.installedFirst && sc.last.Version == 1:
		// The one record of the name, whatever the test or remediation
		// that followed the install did to it.
		obj.Status.History = snapshots([]*hrelease.Release{sc.last}, obj.GetMaxHistory())
	case sc.acted || latest == nil || latest.Version != sc.last.Version ||
		latest.Status != string(sc.last.Info.Status) || latest.Name != sc.last.Name:
		history, err := sc.runner.History(sc.last.Name, obj.GetMaxHistory())
		if err != nil {
			return outcome.Fail(helmv2.GetLastReleaseFailedReason, fmt.Errorf("reading the release history: %w", err))
		}
		obj.Status.History = snapshots(history, obj.GetMaxHistory())
	}
	objs, err := releaseObjects(sc)
	if err != nil {
		return outcome.Fail(helmv2.InventoryBuildFailedReason, err)
	}
	obj.Status.Inventory = kspec.ResourceInventory(inventory.FromObjects(objs))
	return nil
}

// releaseObjects returns the objects of the last release's manifest, each
// in its namespace.
func releaseObjects(sc *releaseScope) ([]*unstructured.Unstructured, error) {
	objs, err := manifestObjects(sc.last.Manifest, sc.last.Namespace, sc.target.Mapper)
	if err != nil {
		return nil, fmt.Errorf("decoding the release manifest: %w", err)
	}
	return objs, nil
}

// manifestObjects returns the objects of a release's manifest, each
// namespaced one that names no namespace in namespace, as Helm applies it.
func manifestObjects(manifest, namespace string, mapper apimeta.RESTMapper) ([]*unstructured.Unstructured, error) {
	objs, err := helmaction.ObjectsOf(manifest)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			continue
		}
		mapping, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
		if err == nil && mapping.Scope.Name() == apimeta.RESTScopeNameNamespace {
			o.SetNamespace(namespace)
		}
	}
	return objs, nil
}
