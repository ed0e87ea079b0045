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
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/cel"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// Object is an object of a kind with dependsOn.
type Object interface {
	client.Object
	conditions.Getter
	GetObservedGeneration() int64
}

// Checker checks the dependencies of objects of one kind. A dependency
// names its kind (meta.DependencyReference.Kind) when it is of another
// kind than the dependent: a HelmRelease may wait for a Kustomization and
// the other way round.
type Checker[T Object] struct {
	// Kind is the kind's name.
	Kind string
	// Client reads the dependencies, usually from the shared cache.
	Client client.Reader
	// New returns an empty object of the kind.
	New func() T
	// DependsOn returns an object's dependencies.
	DependsOn func(obj T) []meta.DependencyReference
	// UpToDate, when set, is the kind's own rule that a dependency of the
	// same kind which is Ready must also meet (applied at the revision obj
	// will apply, say).
	UpToDate func(obj, dep T) bool
	// Others are the other kinds a dependency may name, by kind name.
	Others map[string]Kind
	// NoCrossNamespaceRefs refuses dependencies in other namespaces.
	NoCrossNamespaceRefs bool
	// Requeue is how long to wait for a dependency that is not ready.
	Requeue time.Duration
}

// Kind is a kind that objects of another kind may depend on.
type Kind struct {
	// New returns an empty object of the kind.
	New func() Object
	// DependsOn returns an object's dependencies.
	DependsOn func(obj Object) []meta.DependencyReference
}

// Key returns the key of a dependency of obj.
func Key(obj client.Object, dep meta.DependencyReference) types.NamespacedName {
	ns := dep.Namespace
	if ns == "" {
		ns = obj.GetNamespace()
	}
	return types.NamespacedName{Namespace: ns, Name: dep.Name}
}

// KindOf returns the kind of a dependency of an object of kind own.
func KindOf(own string, dep meta.DependencyReference) string {
	if dep.Kind != "" {
		return dep.Kind
	}
	return own
}

// IndexKey returns the key under which a dependency of obj, an object of
// kind own, is indexed: '<kind>/<namespace>/<name>' of the dependency.
func IndexKey(own string, obj client.Object, dep meta.DependencyReference) string {
	return KindOf(own, dep) + "/" + Key(obj, dep).String()
}

// IndexKeyOf returns the index key of obj itself, an object of kind: the
// key its dependents are indexed under.
func IndexKeyOf(kind string, obj client.Object) string {
	return kind + "/" + client.ObjectKeyFromObject(obj).String()
}

// node is an object of the dependency graph, of any kind.
type node struct {
	kind string
	key  types.NamespacedName
}

func (n node) String() string {
	return n.kind + "/" + n.key.String()
}

// Check returns nil when every dependency of obj is ready, a Waiting error
// naming the first that is not, or a Stalling error for a cycle, a refused
// cross-namespace reference, a kind that cannot be depended on or a
// readyExpr that does not compile.
func (c *Checker[T]) Check(ctx context.Context, obj T) error {
	deps := c.DependsOn(obj)
	if len(deps) == 0 {
		return nil
	}
	for _, ref := range deps {
		kind := KindOf(c.Kind, ref)
		if kind != c.Kind && c.Others[kind].New == nil {
			return outcome.Stall(meta.DependencyNotReadyReason,
				fmt.Errorf("a %s cannot depend on a %s", c.Kind, kind))
		}
		if key := Key(obj, ref); c.NoCrossNamespaceRefs && key.Namespace != obj.GetNamespace() {
			return outcome.Stall(meta.AccessDeniedReason,
				fmt.Errorf("cross-namespace reference to %s '%s' is not allowed", kind, key))
		}
	}
	if cycle := c.FindCycle(ctx, obj); cycle != nil {
		return outcome.Stall(meta.DependencyNotReadyReason, fmt.Errorf("dependency cycle: %s", strings.Join(cycle, " -> ")))
	}
	for _, ref := range deps {
		n := c.nodeOf(obj, ref)
		dep, err := c.get(ctx, n)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return c.wait(fmt.Errorf("dependency '%s' not found", c.describe(n)))
			}
			return err
		}
		ready, err := c.ready(obj, dep, ref)
		if err != nil {
			return err
		}
		if !ready {
			return c.wait(fmt.Errorf("dependency '%s' is not ready", c.describe(n)))
		}
	}
	return nil
}

// nodeOf returns the node of a dependency of o, an object of any kind.
func (c *Checker[T]) nodeOf(o Object, ref meta.DependencyReference) node {
	return node{kind: KindOf(c.kindOf(o), ref), key: Key(o, ref)}
}

// kindOf returns the kind name of o: the checker's kind or one of Others.
func (c *Checker[T]) kindOf(o Object) string {
	if _, ok := o.(T); ok {
		return c.Kind
	}
	for name, k := range c.Others {
		if reflect.TypeOf(k.New()) == reflect.TypeOf(o) {
			return name
		}
	}
	return ""
}

// describe names a dependency as messages always have ('ns/name'), with
// its kind in front when it is another kind's.
func (c *Checker[T]) describe(n node) string {
	if n.kind == c.Kind {
		return n.key.String()
	}
	return n.String()
}

// get reads the object of node n.
func (c *Checker[T]) get(ctx context.Context, n node) (Object, error) {
	var obj Object
	if n.kind == c.Kind {
		obj = c.New()
	} else if k, ok := c.Others[n.kind]; ok {
		obj = k.New()
	} else {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: n.kind}, n.key.Name)
	}
	if err := c.Client.Get(ctx, n.key, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// dependsOnOf returns the dependencies of o, of any kind.
func (c *Checker[T]) dependsOnOf(o Object) []meta.DependencyReference {
	if t, ok := o.(T); ok {
		return c.DependsOn(t)
	}
	if k := c.Others[c.kindOf(o)]; k.DependsOn != nil {
		return k.DependsOn(o)
	}
	return nil
}

func (c *Checker[T]) wait(err error) error {
	return outcome.Wait(meta.DependencyNotReadyReason, err, c.Requeue)
}

// ready tells whether dep is ready for obj: by its readyExpr when it has
// one, else Ready for its current generation and, for a dependency of the
// same kind, up to date by the kind's rule.
func (c *Checker[T]) ready(obj T, dep Object, ref meta.DependencyReference) (bool, error) {
	if ref.ReadyExpr != "" {
		return EvalReadyExpr(ref.ReadyExpr, obj, dep)
	}
	if dep.GetGeneration() != dep.GetObservedGeneration() || !conditions.IsTrue(dep, meta.ReadyCondition) {
		return false, nil
	}
	same, ok := dep.(T)
	return !ok || c.UpToDate == nil || c.UpToDate(obj, same), nil
}

// FindCycle walks the dependency graph from obj, across kinds, and returns
// the path of a cycle through obj, or nil. Missing dependencies end their
// branch.
func (c *Checker[T]) FindCycle(ctx context.Context, obj T) []string {
	start := node{kind: c.Kind, key: client.ObjectKeyFromObject(obj)}
	visited := map[node]bool{}
	var walk func(o Object, path []string) []string
	walk = func(o Object, path []string) []string {
		for _, ref := range c.dependsOnOf(o) {
			n := c.nodeOf(o, ref)
			next := append(append([]string(nil), path...), c.describe(n))
			if n == start {
				return next
			}
			if visited[n] {
				continue
			}
			visited[n] = true
			dep, err := c.get(ctx, n)
			if err != nil {
				continue
			}
			if cycle := walk(dep, next); cycle != nil {
				return cycle
			}
		}
		return nil
	}
	return walk(obj, []string{start.key.String()})
}

// EvalReadyExpr evaluates a dependency's readyExpr with the variables 'dep'
// and 'self'. An expression that does not compile stalls.
func EvalReadyExpr(expr string, self, dep client.Object) (bool, error) {
	prog, err := cel.Compile(expr, []string{"dep", "self"})
	if err != nil {
		return false, outcome.Stall(meta.InvalidCELExpressionReason, fmt.Errorf("invalid readyExpr: %w", err))
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
		return false, outcome.Fail(meta.InvalidCELExpressionReason, fmt.Errorf("evaluating readyExpr: %w", err))
	}
	return ok, nil
}
