// Package patch writes a reconciler's changes to an object back to the API
// server as JSON merge patches against a snapshot taken when the reconcile
// began: one patch for metadata and spec (finalizers), one for the status
// subresource, each sent only when something changed.
//
// The in-memory object is never overwritten by the server's answer, so a
// reconciler can patch in the middle of a run and go on with its own view.
package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Helper patches one object.
type Helper struct {
	client client.Client
	before client.Object
	// written is the resourceVersion of the server's answer to the last
	// patch sent.
	written string
}

// NewHelper snapshots obj; later patches send what changed since.
func NewHelper(obj client.Object, c client.Client) *Helper {
	return &Helper{client: c, before: obj.DeepCopyObject().(client.Object)}
}

// Patch sends the changes made to obj since the last snapshot, then takes a
// new snapshot. A status patch of an object that is gone is not an error.
// The merge patch is computed once and split: the status part goes to the
// status subresource, the rest to the object.
func (h *Helper) Patch(ctx context.Context, obj client.Object) error {
	data, err := client.MergeFrom(h.before).Data(obj)
	if err != nil {
		return fmt.Errorf("computing patch: %w", err)
	}
	var changes map[string]json.RawMessage
	if err := json.Unmarshal(data, &changes); err != nil {
		return fmt.Errorf("reading patch: %w", err)
	}
	status, statusChanged := changes["status"]
	delete(changes, "status")
	if len(changes) > 0 {
		answer := h.answerFor(obj)
		if err := h.client.Patch(ctx, answer, rawMergePatch(changes)); err != nil {
			return fmt.Errorf("patching %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		h.written = answer.GetResourceVersion()
	}
	if statusChanged {
		answer := h.answerFor(obj)
		err := h.client.Status().Patch(ctx, answer, rawMergePatch(map[string]json.RawMessage{"status": status}))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("patching status of %s: %w", client.ObjectKeyFromObject(obj), err)
		}
		if err == nil {
			h.written = answer.GetResourceVersion()
		}
	}
	h.before = obj.DeepCopyObject().(client.Object)
	return nil
}

// Written returns the resourceVersion the object had after the last patch
// this helper sent, or "" when it sent none: the version a cache must have
// seen before it shows the helper's writes.
func (h *Helper) Written() string {
	return h.written
}

// Changes returns the names of the top-level fields of obj's status that
// changed since the last snapshot, and whether anything outside the status
// changed too: what the next Patch would send.
func (h *Helper) Changes(obj client.Object) (statusFields []string, others bool, err error) {
	data, err := client.MergeFrom(h.before).Data(obj)
	if err != nil {
		return nil, false, fmt.Errorf("computing patch: %w", err)
	}
	var status, fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, false, fmt.Errorf("reading patch: %w", err)
	}
	if raw, ok := fields["status"]; ok {
		if err := json.Unmarshal(raw, &status); err != nil {
			return nil, false, fmt.Errorf("reading patch: %w", err)
		}
		delete(fields, "status")
	}
	for name := range status {
		statusFields = append(statusFields, name)
	}
	sort.Strings(statusFields)
	return statusFields, len(fields) > 0, nil
}

// answerFor returns what the server's answer to a patch of obj is decoded
// into, and so what the server sends: only the metadata, since the answer
// is not used. An object the client's scheme does not know gets all of it.
func (h *Helper) answerFor(obj client.Object) client.Object {
	gvk, err := apiutil.GVKForObject(obj, h.client.Scheme())
	if err != nil {
		return obj.DeepCopyObject().(client.Object)
	}
	answer := &metav1.PartialObjectMetadata{}
	answer.SetGroupVersionKind(gvk)
	answer.SetNamespace(obj.GetNamespace())
	answer.SetName(obj.GetName())
	return answer
}

// rawMergePatch returns the JSON merge patch of fields.
func rawMergePatch(fields map[string]json.RawMessage) client.Patch {
	data, _ := json.Marshal(fields) // raw JSON values always marshal
	return client.RawPatch(types.MergePatchType, data)
}
