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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helper patches one object.
type Helper struct {
	client client.Client
	before client.Object
}

// NewHelper snapshots obj; later patches send what changed since.
func NewHelper(obj client.Object, c client.Client) *Helper {
	return &Helper{client: c, before: obj.DeepCopyObject().(client.Object)}
}

// Patch sends the changes made to obj since the last snapshot, then takes a
// new snapshot. A status patch of an object that is gone is not an error.
func (h *Helper) Patch(ctx context.Context, obj client.Object) error {
	from := client.MergeFrom(h.before)
	data, err := from.Data(obj)
	if err != nil {
		return fmt.Errorf("computing patch: %w", err)
	}
	var changes map[string]json.RawMessage
	if err := json.Unmarshal(data, &changes); err != nil {
		return fmt.Errorf("reading patch: %w", err)
	}
	_, statusChanged := changes["status"]
	delete(changes, "status")

	if len(changes) > 0 {
		if err := h.client.Patch(ctx, obj.DeepCopyObject().(client.Object), from); err != nil {
			return fmt.Errorf("patching %s: %w", client.ObjectKeyFromObject(obj), err)
		}
	}
	if statusChanged {
		err := h.client.Status().Patch(ctx, obj.DeepCopyObject().(client.Object), from)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("patching status of %s: %w", client.ObjectKeyFromObject(obj), err)
		}
	}
	h.before = obj.DeepCopyObject().(client.Object)
	return nil
}
