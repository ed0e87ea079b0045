package notification

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	"github.com/windlass-dev/windlass/internal/cel"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets;helmrepositories;helmcharts;externalartifacts,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=gating.toolkit.fluxcd.io,resources=gates,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=image.toolkit.fluxcd.io,resources=imagerepositories;imagepolicies;imageupdateautomations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=source.extensions.fluxcd.io,resources=artifactgenerators,verbs=get;list;watch;patch

// defaultAPIVersion returns the apiVersion of a kind a Receiver may name,
// for the resources that give none: the version Windlass serves it at, or
// "" for a kind that is no webhook target.
func defaultAPIVersion(kind string) string {
	if k, ok := kinds.Named(kind); ok && k.WebhookTarget {
		return k.GroupVersion.String()
	}
	return ""
}

// resourceGVK returns the group, version and kind that ref names.
func resourceGVK(ref notificationv1.ResourceReference) (schema.GroupVersionKind, error) {
	apiVersion := ref.APIVersion
	if apiVersion == "" {
		apiVersion = defaultAPIVersion(ref.Kind)
	}
	if apiVersion == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("resource kind '%s' is not one a Receiver can name: give its apiVersion", ref.Kind)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("resource %s '%s': invalid apiVersion '%s'", ref.Kind, ref.Name, apiVersion)
	}
	return gv.WithKind(ref.Kind), nil
}

// isGate reports whether gvk is the Windlass Gate.
func isGate(gvk schema.GroupVersionKind) bool {
	return gvk.Group == gatingv1alpha1.GroupVersion.Group && gvk.Kind == gatingv1alpha1.GateKind
}

// target is an object selected by a request, and the reference that
// selected it.
type target struct {
	obj *metav1.PartialObjectMetadata
	ref notificationv1.ResourceReference
}

// selectTargets returns the objects that ref selects for rcv, by their
// metadata, read from c.
func selectTargets(ctx context.Context, c client.Reader, rcv *notificationv1.Receiver, ref notificationv1.ResourceReference,
	noCrossNamespaceRefs bool) ([]target, error) {
	gvk, err := resourceGVK(ref)
	if err != nil {
		return nil, err
	}
	if err := checkNamespace(rcv, ref, noCrossNamespaceRefs); err != nil {
		return nil, err
	}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = rcv.Namespace
	}
	if ref.Name != notificationv1.WildcardName {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%s '%s/%s' not found", ref.Kind, namespace, ref.Name)
			}
			return nil, fmt.Errorf("getting %s '%s/%s': %w", ref.Kind, namespace, ref.Name, err)
		}
		obj.SetGroupVersionKind(gvk)
		return []target{{obj: obj, ref: ref}}, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels(ref.MatchLabels)); err != nil {
		return nil, fmt.Errorf("listing %s in '%s': %w", ref.Kind, namespace, err)
	}
	targets := make([]target, 0, len(list.Items))
	for i := range list.Items {
		obj := &list.Items[i]
		obj.SetGroupVersionKind(gvk)
		targets = append(targets, target{obj: obj, ref: ref})
	}
	return targets, nil
}

// filterCache keeps the compiled resourceFilter of each Receiver, for its
// generation.
type filterCache struct {
	mu       sync.Mutex
	programs map[types.UID]compiledFilter
}

type compiledFilter struct {
	generation int64
	expr       string
	program    *cel.Program
}

// maxCachedFilters bounds the cache: past it, it starts again empty (the
// entries of deleted Receivers go with it).
const maxCachedFilters = 1024

// program returns rcv's compiled resourceFilter, compiling it once per
// generation; nil when it has none.
func (c *filterCache) program(rcv *notificationv1.Receiver) (*cel.Program, error) {
	expr := rcv.Spec.ResourceFilter
	if expr == "" {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.programs[rcv.UID]; ok && f.generation == rcv.Generation && f.expr == expr {
		return f.program, nil
	}
	program, err := cel.Compile(expr, filterVars)
	if err != nil {
		return nil, fmt.Errorf("spec.resourceFilter: %w", err)
	}
	if c.programs == nil || len(c.programs) >= maxCachedFilters {
		c.programs = map[types.UID]compiledFilter{}
	}
	c.programs[rcv.UID] = compiledFilter{generation: rcv.Generation, expr: expr, program: program}
	return program, nil
}

// keep reports whether the filter (nil keeps everything) holds for t and
// the payload.
func keep(ctx context.Context, filter *cel.Program, t target, payload map[string]any) (bool, error) {
	if filter == nil {
		return true, nil
	}
	res, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
	if err != nil {
		return false, err
	}
	if payload == nil {
		payload = map[string]any{}
	}
	ok, err := filter.EvalBool(ctx, map[string]any{"res": res, "req": payload})
	if err != nil {
		return false, fmt.Errorf("spec.resourceFilter on %s '%s/%s': %w", t.ref.Kind, t.obj.Namespace, t.obj.Name, err)
	}
	return ok, nil
}

// requestPatch returns the merge patch that asks for the reconciliation of
// t at now: reconcile.fluxcd.io/requestedAt, and for a Gate the open or
// close request of the reference's action, as `windlass gate` writes them.
func requestPatch(t target, now time.Time) ([]byte, error) {
	now = now.UTC()
	annotations := map[string]string{meta.ReconcileRequestAnnotation: now.Format(time.RFC3339Nano)}
	if isGate(t.obj.GroupVersionKind()) {
		key := gatingv1alpha1.OpenRequestAnnotation
		if t.ref.GetAction() == notificationv1.GateActionClose {
			key = gatingv1alpha1.CloseRequestAnnotation
		}
		annotations[key] = now.Truncate(time.Second).Format(time.RFC3339)
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
}

// requestAll selects the objects of rcv's resources, keeps those the filter
// accepts and asks for their reconciliation. It returns how many it asked
// for, and every failure joined.
func (s *WebhookServer) requestAll(ctx context.Context, rcv *notificationv1.Receiver, result webhook.Result) (int, error) {
	filter, err := s.filters.program(rcv)
	if err != nil {
		return 0, err
	}
	var errs []error
	done := map[string]bool{}
	requested := 0
	for _, ref := range rcv.Spec.Resources {
		targets, err := selectTargets(ctx, s.targets(), rcv, ref, s.NoCrossNamespaceRefs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range targets {
			id := t.obj.GroupVersionKind().GroupKind().String() + "/" + t.obj.Namespace + "/" + t.obj.Name
			if done[id] {
				continue
			}
			if ok, err := keep(ctx, filter, t, result.Payload); err != nil || !ok {
				if err != nil {
					errs = append(errs, err)
				}
				continue
			}
			done[id] = true
			if err := s.checkGateRequest(ctx, rcv, t, result); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := s.request(ctx, t); err != nil {
				errs = append(errs, err)
				continue
			}
			requested++
		}
	}
	return requested, errors.Join(errs...)
}

// checkGateRequest refuses to act on a Gate t for rcv, for the request
// result: from another namespace unless the Gate lists rcv in
// spec.allowedReceivers, and to open it unless the request was signed with
// a time (a ReplayGuard has seen it only once).
func (s *WebhookServer) checkGateRequest(ctx context.Context, rcv *notificationv1.Receiver, t target, result webhook.Result) error {
	if !isGate(t.obj.GroupVersionKind()) {
		return nil
	}
	if t.ref.GetAction() == notificationv1.GateActionOpen && result.SignedAt.IsZero() {
		return fmt.Errorf("Gate '%s/%s' opens only on a request signed with a time (header %s)",
			t.obj.Namespace, t.obj.Name, webhook.TimestampHeader)
	}
	if t.obj.Namespace == rcv.Namespace {
		return nil
	}
	var gate gatingv1alpha1.Gate
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(t.obj), &gate); err != nil {
		return fmt.Errorf("getting Gate '%s/%s': %w", t.obj.Namespace, t.obj.Name, err)
	}
	if !gate.AllowsReceiver(rcv.Namespace, rcv.Name) {
		return fmt.Errorf("Gate '%s/%s' does not list Receiver '%s/%s' in spec.allowedReceivers",
			gate.Namespace, gate.Name, rcv.Namespace, rcv.Name)
	}
	return nil
}

// request patches the annotations of t.
func (s *WebhookServer) request(ctx context.Context, t target) error {
	body, err := requestPatch(t, s.now())
	if err != nil {
		return err
	}
	if err := s.Client.Patch(ctx, t.obj, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("annotating %s '%s/%s': %w", t.ref.Kind, t.obj.Namespace, t.obj.Name, err)
	}
	return nil
}

// targets returns the reader of the objects to annotate.
func (s *WebhookServer) targets() client.Reader {
	if s.Targets != nil {
		return s.Targets
	}
	return s.Client
}
