package health

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/parallel"
)

// Status is the health of one object.
type Status string

const (
	// Current means the object has reached its desired state.
	Current Status = "Current"
	// InProgress means the object is still being reconciled (this includes
	// objects being deleted and objects whose status cannot be read yet).
	InProgress Status = "InProgress"
	// Failed means the object's controller gave up: it is Stalled.
	Failed Status = "Failed"
	// NotFound means the object, or its kind, does not exist.
	NotFound Status = "NotFound"
)

// ObjectRef names one object to check.
type ObjectRef struct {
	// APIVersion is the object's group/version ("apps/v1", or "v1").
	APIVersion string
	// Kind is the object's kind.
	Kind string
	// Namespace is the object's namespace; empty for cluster-scoped
	// objects (and ignored for them).
	Namespace string
	// Name is the object's name.
	Name string
}

// String returns Kind/namespace/name, or Kind/name for an object without
// a namespace.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// GroupVersionKind returns the object's group, version and kind.
func (r ObjectRef) GroupVersionKind() (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("%s: invalid apiVersion %q: %w", r, r.APIVersion, err)
	}
	if gv.Version == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("%s: apiVersion %q has no version", r, r.APIVersion)
	}
	return gv.WithKind(r.Kind), nil
}

// validate checks that the reference names an object.
func (r ObjectRef) validate() (schema.GroupVersionKind, error) {
	gvk, err := r.GroupVersionKind()
	if err != nil {
		return gvk, err
	}
	if r.Kind == "" || r.Name == "" {
		return gvk, fmt.Errorf("%s: kind and name are required", r)
	}
	return gvk, nil
}

// ObjectStatus is the health of one object.
type ObjectStatus struct {
	// Ref names the object (without a namespace when it is cluster-scoped).
	Ref ObjectRef
	// Status is its health.
	Status Status
	// Message explains the status: kstatus' message, the expression that
	// decided, or why the object was not found.
	Message string
	// ResourceVersion and Generation are those of the object the status
	// was computed from; empty when it was not found.
	ResourceVersion string
	Generation      int64
}

// String returns "Kind/namespace/name status: 'Status': message".
func (s ObjectStatus) String() string {
	out := fmt.Sprintf("%s status: '%s'", s.Ref, s.Status)
	if s.Message != "" {
		out += ": " + s.Message
	}
	return out
}

// Result is the health of the objects of one check, in the order they were
// given.
type Result []ObjectStatus

// AllCurrent reports whether every object is Current.
func (r Result) AllCurrent() bool {
	for _, s := range r {
		if s.Status != Current {
			return false
		}
	}
	return true
}

// Failed returns the objects that are Failed.
func (r Result) Failed() []ObjectStatus {
	return r.filter(func(s Status) bool { return s == Failed })
}

// NotReady returns the objects that are not Current.
func (r Result) NotReady() []ObjectStatus {
	return r.filter(func(s Status) bool { return s != Current })
}

// Refs returns the objects of statuses, in their order.
func Refs(statuses []ObjectStatus) []ObjectRef {
	refs := make([]ObjectRef, len(statuses))
	for i, s := range statuses {
		refs[i] = s.Ref
	}
	return refs
}

func (r Result) filter(keep func(Status) bool) []ObjectStatus {
	var out []ObjectStatus
	for _, s := range r {
		if keep(s.Status) {
			out = append(out, s)
		}
	}
	return out
}

// DefaultConcurrency is how many objects a Checker reads at the same time.
const DefaultConcurrency = 8

// Checker computes the health of objects in one cluster. It is safe for
// concurrent use.
type Checker struct {
	reader      client.Reader
	mapper      meta.RESTMapper
	concurrency int
	// verdicts, if set, answers before reader (see WithVerdicts).
	verdicts Verdicts
}

// NewChecker returns a Checker that reads objects with reader and learns
// their scope from mapper. The reader should not be cached (a manager's
// GetAPIReader, or a client from client.New): a cache would start an
// informer for every kind checked, and may lag behind the cluster. A
// mapper that discovers kinds lazily (controller-runtime's dynamic
// RESTMapper) lets a check find kinds whose CRDs were applied moments
// before.
func NewChecker(reader client.Reader, mapper meta.RESTMapper) *Checker {
	return &Checker{reader: reader, mapper: mapper, concurrency: DefaultConcurrency}
}

// Check reads each object once and returns its health: by the first
// expression of exprs that matches it, else by kstatus. An object whose
// kind is unknown to the cluster is NotFound. Check fails on an invalid
// reference, an expression that does not compile (an *ExprError) or an
// error reading an object other than NotFound.
func (c *Checker) Check(ctx context.Context, refs []ObjectRef, exprs ...Expr) (Result, error) {
	set, err := compileExprs(exprs)
	if err != nil {
		return nil, err
	}
	return c.check(ctx, refs, set)
}

func (c *Checker) check(ctx context.Context, refs []ObjectRef, set *exprSet) (Result, error) {
	out := make(Result, len(refs))
	errs := make([]error, len(refs))
	panics := parallel.Do(ctx, len(refs), c.concurrency, func(i int) { out[i], errs[i] = c.checkOne(ctx, refs[i], set) })
	for _, p := range panics {
		errs[p.Index] = fmt.Errorf("%s: checking its health: %w", refs[p.Index], p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Checker) checkOne(ctx context.Context, ref ObjectRef, set *exprSet) (ObjectStatus, error) {
	gvk, err := ref.validate()
	if err != nil {
		return ObjectStatus{}, err
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return ObjectStatus{Ref: ref, Status: NotFound,
				Message: fmt.Sprintf("the cluster has no kind %s in %s", gvk.Kind, gvk.GroupVersion())}, nil
		}
		return ObjectStatus{}, fmt.Errorf("%s: finding its API resource: %w", ref, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		ref.Namespace = ""
	} else if ref.Namespace == "" {
		return ObjectStatus{}, fmt.Errorf("%s: a namespaced %s needs a namespace", ref, gvk.Kind)
	}

	rule := set.match(gvk)
	if rule == nil && c.verdicts != nil {
		if s, ok := c.verdicts.Verdict(ctx, ref, gvk); ok {
			return s, nil
		}
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ObjectStatus{Ref: ref, Status: NotFound, Message: "object not found"}, nil
		}
		if meta.IsNoMatchError(err) {
			return ObjectStatus{Ref: ref, Status: NotFound, Message: err.Error()}, nil
		}
		return ObjectStatus{}, fmt.Errorf("%s: reading it: %w", ref, err)
	}

	out := ObjectStatus{Ref: ref, ResourceVersion: obj.GetResourceVersion(), Generation: obj.GetGeneration()}
	if rule != nil {
		out.Status, out.Message = rule.evaluate(ctx, obj)
	} else {
		out.Status, out.Message = computeKstatus(obj)
	}
	return out, nil
}

// computeKstatus maps kstatus' result to a Status.
func computeKstatus(obj *unstructured.Unstructured) (Status, string) {
	res, err := kstatus.Compute(obj)
	if err != nil {
		return InProgress, fmt.Sprintf("computing the status: %v", err)
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		return Current, res.Message
	case kstatus.FailedStatus:
		return Failed, res.Message
	case kstatus.NotFoundStatus:
		return NotFound, res.Message
	default: // InProgress, Terminating, Unknown
		return InProgress, res.Message
	}
}
