// Package dependency decides whether an object's dependsOn are ready: the
// same rules for every kind that has dependsOn (Kustomization,
// HelmRelease): a dependency is ready when it is Ready for its current
// generation (plus the kind's own rule, such as being at the same source
// revision), or when its readyExpr, a CEL expression over 'dep' and 'self',
// is true. A cycle is reported, never waited on, and the cross-namespace
// lockdown refuses references to other namespaces.
package dependency

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/cel"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile"
)

// Object is an object of a kind with dependsOn.
type Object interface {
	client.Object
	conditions.Getter
	GetObservedGeneration() int64
}

// Checker checks the dependencies of objects of one kind.
type Checker[T Object] struct {
	// Kind is the kind's name, for messages.
	Kind string
	// Client reads the dependencies, usually from the shared cache.
	Client client.Reader
	// New returns an empty object of the kind.
	New func() T
	// DependsOn returns an object's dependencies.
	DependsOn func(obj T) []meta.DependencyReference
	// UpToDate, when set, is the kind's own rule that a dependency which is
	// Ready must also meet (applied at the revision obj will apply, say).
	UpToDate func(obj, dep T) bool
	// NoCrossNamespaceRefs refuses dependencies in other namespaces.
	NoCrossNamespaceRefs bool
	// Requeue is how long to wait for a dependency that is not ready.
	Requeue time.Duration
}

// Key returns the key of a dependency of obj.
func Key(obj client.Object, dep meta.DependencyReference) types.NamespacedName {
	ns := dep.Namespace
	if ns == "" {
		ns = obj.GetNamespace()
	}
	return types.NamespacedName{Namespace: ns, Name: dep.Name}
}

// Check returns nil when every dependency of obj is ready, a Waiting error
// naming the first that is not, or a Stalling error for a cycle, a refused
// cross-namespace reference or a readyExpr that does not compile.
func (c *Checker[T]) Check(ctx context.Context, obj T) error {
	deps := c.DependsOn(obj)
	if len(deps) == 0 {
		return nil
	}
	for _, ref := range deps {
		if key := Key(obj, ref); c.NoCrossNamespaceRefs && key.Namespace != obj.GetNamespace() {
			return reconcile.Stall(meta.AccessDeniedReason,
				fmt.Errorf("cross-namespace reference to %s '%s' is not allowed", c.Kind, key))
		}
	}
	if cycle := c.FindCycle(ctx, obj); cycle != nil {
		return reconcile.Stall(meta.DependencyNotReadyReason, fmt.Errorf("dependency cycle: %s", strings.Join(cycle, " -> ")))
	}
	for _, ref := range deps {
		key := Key(obj, ref)
		dep := c.New()
		if err := c.Client.Get(ctx, key, dep); err != nil {
			if apierrors.IsNotFound(err) {
				return c.wait(fmt.Errorf("dependency '%s' not found", key))
			}
			return err
		}
		ready, err := c.ready(obj, dep, ref)
		if err != nil {
			return err
		}
		if !ready {
			return c.wait(fmt.Errorf("dependency '%s' is not ready", key))
		}
	}
	return nil
}

func (c *Checker[T]) wait(err error) error {
	return reconcile.Wait(meta.DependencyNotReadyReason, err, c.Requeue)
}

// ready tells whether dep is ready for obj: by its readyExpr when it has
// one, else Ready for its current generation and up to date by the kind's
// rule.
func (c *Checker[T]) ready(obj, dep T, ref meta.DependencyReference) (bool, error) {
	if ref.ReadyExpr != "" {
		return EvalReadyExpr(ref.ReadyExpr, obj, dep)
	}
	if dep.GetGeneration() != dep.GetObservedGeneration() || !conditions.IsTrue(dep, meta.ReadyCondition) {
		return false, nil
	}
	return c.UpToDate == nil || c.UpToDate(obj, dep), nil
}

// FindCycle walks the dependency graph from obj and returns the path of a
// cycle through obj, or nil. Missing dependencies end their branch.
func (c *Checker[T]) FindCycle(ctx context.Context, obj T) []string {
	start := client.ObjectKeyFromObject(obj)
	visited := map[types.NamespacedName]bool{}
	var walk func(o T, path []string) []string
	walk = func(o T, path []string) []string {
		for _, ref := range c.DependsOn(o) {
			key := Key(o, ref)
			next := append(append([]string(nil), path...), key.String())
			if key == start {
				return next
			}
			if visited[key] {
				continue
			}
			visited[key] = true
			dep := c.New()
			if err := c.Client.Get(ctx, key, dep); err != nil {
				continue
			}
			if cycle := walk(dep, next); cycle != nil {
				return cycle
			}
		}
		return nil
	}
	return walk(obj, []string{start.String()})
}

// EvalReadyExpr evaluates a dependency's readyExpr with the variables 'dep'
// and 'self'. An expression that does not compile stalls.
func EvalReadyExpr(expr string, self, dep client.Object) (bool, error) {
	prog, err := cel.Compile(expr, []string{"dep", "self"})
	if err != nil {
		return false, reconcile.Stall(meta.InvalidCELExpressionReason, fmt.Errorf("invalid readyExpr: %w", err))
	}
	selfMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(self)
	if err != nil {
		return false, err
	}
	depMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dep)
	if err != nil {
		return false, err
	}
	ok, err := prog.EvalBool(context.Background(), map[string]any{"dep": depMap, "self": selfMap})
	if err != nil {
		return false, reconcile.Fail(meta.InvalidCELExpressionReason, fmt.Errorf("evaluating readyExpr: %w", err))
	}
	return ok, nil
}
