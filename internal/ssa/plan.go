package ssa

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/windlass-dev/windlass/internal/inventory"
)

// Planned is what an apply would do to one object, as a server-side dry
// run tells.
type Planned struct {
	// Object identifies the object; cluster-scoped objects have no
	// namespace.
	Object inventory.ObjMetadata
	// Version is the API version the object would be applied with.
	Version string
	// Action is created, configured, unchanged or skipped.
	Action Action
	// Live is the object in the cluster; nil when there is none, and when
	// the object was not read (an object created, or skipped without a
	// read).
	Live *unstructured.Unstructured
	// Result is the object as the apply would leave it: the dry run's
	// answer. An object that can only be checked once stage 1 of the same
	// set is applied (in a namespace, or of a kind, that the set brings)
	// and an object that would be deleted and created again hold the
	// object that would be applied. Nil for skipped objects.
	Result *unstructured.Unstructured
}

// Plan runs the checks of ApplyAllStaged (the same policies, owner labels
// and force rules) and returns, in the order of objs, what applying them
// would do to each, without writing anything. Refused objects come back as
// a *ValidationError, as from Validate.
func (m *Manager) Plan(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) ([]Planned, error) {
	opts.Fresh = false
	items, idx, err := m.prepare(objs)
	if err != nil {
		return nil, err
	}
	if err := m.planAll(ctx, items, idx, opts, false); err != nil {
		return nil, err
	}
	out := make([]Planned, 0, len(items))
	for _, it := range items {
		p := Planned{Object: it.id, Version: it.version, Action: it.action, Live: it.live, Result: it.planned}
		if it.deferred || it.recreate {
			p.Action, p.Result = ActionCreated, it.desired
		}
		if p.Action == ActionSkipped {
			p.Result = nil
		}
		out = append(out, p)
	}
	return out, nil
}
