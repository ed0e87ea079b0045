package kustomize

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// dependencyKey returns the key of a dependency of obj.
func dependencyKey(obj *kustomizev1.Kustomization, dep meta.DependencyReference) types.NamespacedName {
	ns := dep.Namespace
	if ns == "" {
		ns = obj.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: dep.Name}
}

// checkDependencies returns nil when every dependency is ready at its latest
// revision, a Waiting error naming the first that is not, or a Stalling
// error for a cycle or a refused cross-namespace reference.
func (r *KustomizationReconciler) checkDependencies(ctx context.Context, obj *kustomizev1.Kustomization, source sourceObject) error {
	if len(obj.Spec.DependsOn) == 0 {
		return nil
	}
	if cycle := r.findCycle(ctx, obj); cycle != nil {
		return reconcile.Stall(kustomizev1.DependencyNotReadyReason,
			fmt.Errorf("dependency cycle: %s", strings.Join(cycle, " -> ")))
	}
	for _, ref := range obj.Spec.DependsOn {
		key := dependencyKey(obj, ref)
		if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
			return reconcile.Stall(kustomizev1.AccessDeniedReason,
				fmt.Errorf("cross-namespace reference to Kustomization '%s' is not allowed", key))
		}
		var dep kustomizev1.Kustomization
		if err := r.Get(ctx, key, &dep); err != nil {
			if apierrors.IsNotFound(err) {
				return r.waitFor(fmt.Errorf("dependency '%s' not found", key))
			}
			return err
		}
		ready, err := r.dependencyReady(obj, &dep, ref, source)
		if err != nil {
			return err
		}
		if !ready {
			return r.waitFor(fmt.Errorf("dependency '%s' is not ready", key))
		}
	}
	return nil
}

func (r *KustomizationReconciler) waitFor(err error) error {
	return reconcile.Wait(kustomizev1.DependencyNotReadyReason, err, r.DependencyRequeue)
}

// dependencyReady tells whether dep is ready for obj: by its readyExpr when
// it has one, else Ready for its current generation and, when both use the
// same source, at the source's current revision.
func (r *KustomizationReconciler) dependencyReady(obj, dep *kustomizev1.Kustomization, ref meta.DependencyReference, source sourceObject) (bool, error) {
	if ref.ReadyExpr != "" {
		return evalReadyExpr(ref.ReadyExpr, obj, dep)
	}
	if dep.Generation != dep.Status.ObservedGeneration || !conditions.IsTrue(dep, meta.ReadyCondition) {
		return false, nil
	}
	if source != nil && sameSource(obj, dep) {
		if a := source.GetArtifact(); a != nil && dep.Status.LastAppliedRevision != a.Revision {
			return false, nil
		}
	}
	return true, nil
}

func sameSource(a, b *kustomizev1.Kustomization) bool {
	return a.Spec.SourceRef.Kind == b.Spec.SourceRef.Kind && a.Spec.SourceRef.Name == b.Spec.SourceRef.Name &&
		sourceNamespace(a) == sourceNamespace(b)
}

// findCycle walks the dependency graph from obj and returns the path of a
// cycle through obj, or nil. Missing dependencies end their branch.
func (r *KustomizationReconciler) findCycle(ctx context.Context, obj *kustomizev1.Kustomization) []string {
	start := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	visited := map[types.NamespacedName]bool{}
	var walk func(k *kustomizev1.Kustomization, path []string) []string
	walk = func(k *kustomizev1.Kustomization, path []string) []string {
		for _, ref := range k.Spec.DependsOn {
			key := dependencyKey(k, ref)
			next := append(append([]string(nil), path...), key.String())
			if key == start {
				return next
			}
			if visited[key] {
				continue
			}
			visited[key] = true
			var dep kustomizev1.Kustomization
			if err := r.Get(ctx, key, &dep); err != nil {
				continue
			}
			if cycle := walk(&dep, next); cycle != nil {
				return cycle
			}
		}
		return nil
	}
	return walk(obj, []string{start.String()})
}
