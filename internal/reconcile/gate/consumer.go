package gate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
)

// Consumer is an object that waits behind gates (spec.gates).
type Consumer interface {
	client.Object
	GetGates() []meta.NamespacedObjectReference
}

// Key returns the key of a gate that consumer names.
func Key(consumer client.Object, ref meta.NamespacedObjectReference) types.NamespacedName {
	ns := ref.Namespace
	if ns == "" {
		ns = consumer.GetNamespace()
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}
}

// ClosedError says which gate holds a consumer back.
type ClosedError struct {
	// Gate is the gate that is closed or missing.
	Gate types.NamespacedName
	// Missing is true when the gate does not exist (it counts as closed).
	Missing bool
}

func (e *ClosedError) Error() string {
	if e.Missing {
		return fmt.Sprintf("gate '%s' is missing, and a missing gate counts as closed", e.Gate)
	}
	return fmt.Sprintf("gate '%s' is closed", e.Gate)
}

// CrossNamespaceError is a gate in another namespace while such references
// are refused (--no-cross-namespace-refs).
type CrossNamespaceError struct {
	Gate types.NamespacedName
}

func (e *CrossNamespaceError) Error() string {
	return fmt.Sprintf("gate '%s' is in another namespace, and cross-namespace references are not allowed", e.Gate)
}

// Check returns nil when every gate of consumer is open, a *ClosedError
// naming the first that is closed or missing, or a *CrossNamespaceError.
// A gate is open only when its Opened condition is True: a gate the gating
// controller has not decided yet is closed. It reads the gates through r,
// the shared cache in a controller, so it costs no request.
func Check(ctx context.Context, r client.Reader, consumer Consumer, noCrossNamespaceRefs bool) error {
	for _, ref := range consumer.GetGates() {
		key := Key(consumer, ref)
		if noCrossNamespaceRefs && key.Namespace != consumer.GetNamespace() {
			return &CrossNamespaceError{Gate: key}
		}
		var g gatingv1alpha1.Gate
		if err := r.Get(ctx, key, &g); err != nil {
			if apierrors.IsNotFound(err) {
				return &ClosedError{Gate: key, Missing: true}
			}
			return fmt.Errorf("reading gate '%s': %w", key, err)
		}
		if !g.IsOpened() {
			return &ClosedError{Gate: key}
		}
	}
	return nil
}

// IndexKey is the field index of consumers by the gates they name, as
// "namespace/name".
const IndexKey = ".spec.gates"

// IndexValues returns the index values of obj, a Consumer: the keys of
// its gates.
func IndexValues(obj client.Object) []string {
	consumer, ok := obj.(Consumer)
	if !ok {
		return nil
	}
	refs := consumer.GetGates()
	values := make([]string, 0, len(refs))
	for _, ref := range refs {
		values = append(values, Key(consumer, ref).String())
	}
	return values
}

// EnqueueConsumers returns the handler of a watch on Gates that requests
// the reconciliation of every consumer of the changed gate, listed from the
// cache through IndexKey into newList(), an empty list of the consumers'
// kind.
func EnqueueConsumers(c client.Reader, newList func() client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, gate client.Object) []ctrlreconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.MatchingFields{IndexKey: client.ObjectKeyFromObject(gate).String()}); err != nil {
			return nil
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return nil
		}
		reqs := make([]ctrlreconcile.Request, 0, len(items))
		for _, item := range items {
			if o, ok := item.(client.Object); ok {
				reqs = append(reqs, ctrlreconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return reqs
	})
}

// OpenedChanged passes the Gate events that can change what its consumers
// do: a gate created or deleted, or whose Opened condition changed.
func OpenedChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*gatingv1alpha1.Gate)
			after, ok2 := e.ObjectNew.(*gatingv1alpha1.Gate)
			return !ok1 || !ok2 || before.IsOpened() != after.IsOpened()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
