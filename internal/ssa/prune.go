package ssa

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/inventory"
)

// PruneOptions configure Prune.
type PruneOptions struct {
	// WaitForTermination waits until every deleted object is gone
	// (finalizers done). Objects still there when WaitTimeout ends are
	// survivors.
	WaitForTermination bool
	// WaitTimeout bounds WaitForTermination; DefaultWaitTimeout when zero.
	WaitTimeout time.Duration
}

// pruneTarget is one stale object on its way to deletion.
type pruneTarget struct {
	entry inventory.Entry
	id    inventory.ObjMetadata
	live  *unstructured.Unstructured
}

// Prune deletes the objects of stale, with background propagation, in the
// reverse of the apply stages (custom resources before their CRDs, objects
// before their namespaces). It leaves alone, and reports as skipped, the
// objects that are labelled or annotated prune: disabled (or ssa: Ignore,
// or reconcile: disabled) and the objects that no longer carry this
// Manager's owner labels: someone else took them over. Objects already gone,
// and objects of kinds the cluster no longer serves (their CRD was deleted),
// are dropped without a word.
//
// A refused deletion (an admission webhook or policy, RBAC) does not stop
// the others: Prune deletes what it can and returns a *PruneError whose
// Survivors the caller must keep in its inventory, to retry later.
func (m *Manager) Prune(ctx context.Context, stale []inventory.Entry, opts PruneOptions) (*ChangeSet, error) {
	cs := &ChangeSet{}
	perr := &PruneError{}
	fail := func(e inventory.Entry, oe *ObjectError, survive bool) {
		perr.Failures = append(perr.Failures, oe)
		if survive {
			perr.Survivors = append(perr.Survivors, e)
		}
	}

	var targets []pruneTarget
	for _, e := range stale {
		id, err := e.ObjMetadata()
		if err != nil {
			// A malformed entry can never be acted on: report it and let
			// it drop out of the inventory.
			fail(e, &ObjectError{Object: inventory.ObjMetadata{Kind: "InventoryEntry", Name: e.ID}, Message: err.Error()}, false)
			continue
		}
		targets = append(targets, pruneTarget{entry: e, id: id})
	}
	slices.SortStableFunc(targets, func(a, b pruneTarget) int {
		return stageOf(b.id.GroupKind()) - stageOf(a.id.GroupKind())
	})

	var deleted []pruneTarget
	for _, t := range targets {
		live, oe := m.readStale(ctx, t)
		if oe != nil {
			fail(t.entry, oe, true)
			continue
		}
		if live == nil {
			continue
		}
		t.live = live
		if PruneDisabled(live) || ignored(live) || !m.owns(live) {
			cs.add(t.id, live.GroupVersionKind().Version, ActionSkipped)
			continue
		}
		if live.GetDeletionTimestamp() == nil {
			uid := live.GetUID()
			err := m.client.Delete(ctx, live,
				client.PropagationPolicy(metav1.DeletePropagationBackground),
				client.Preconditions{UID: &uid})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				fail(t.entry, newObjectError(t.id, live, err), true)
				continue
			}
		}
		cs.add(t.id, live.GroupVersionKind().Version, ActionDeleted)
		deleted = append(deleted, t)
	}

	if opts.WaitForTermination {
		timeout := waitTimeout(opts.WaitTimeout)
		for _, t := range deleted {
			if oe := m.waitGone(ctx, t.id, t.live, timeout); oe != nil {
				fail(t.entry, oe, true)
			}
		}
	}
	if len(perr.Failures) > 0 {
		return cs, perr
	}
	return cs, nil
}

// readStale reads the live object of a stale entry. It returns nil when the
// object is gone or its kind is no longer served.
func (m *Manager) readStale(ctx context.Context, t pruneTarget) (*unstructured.Unstructured, *ObjectError) {
	gk := t.id.GroupKind()
	mapping, err := m.mapper.RESTMapping(gk, t.entry.Version)
	if meta.IsNoMatchError(err) {
		// The recorded version may be gone while the kind is still served
		// at another one.
		mapping, err = m.mapper.RESTMapping(gk)
	}
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, newObjectError(t.id, nil, err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(mapping.GroupVersionKind)
	key := client.ObjectKey{Name: t.id.Name}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		key.Namespace = t.id.Namespace
	}
	err = m.client.Get(ctx, key, live)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		// NotFound also covers a kind whose CRD was deleted while the
		// mapper still remembers it.
		return nil, nil
	case err != nil:
		return nil, newObjectError(t.id, nil, err)
	}
	return live, nil
}

// DeletionPolicy says what happens to the applied objects when their owner
// is deleted.
type DeletionPolicy string

const (
	// DeletionPolicyMirrorPrune deletes the objects when the owner prunes,
	// and orphans them otherwise. It is the default.
	DeletionPolicyMirrorPrune DeletionPolicy = "MirrorPrune"
	// DeletionPolicyDelete deletes the objects.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyWaitForTermination deletes the objects and waits until
	// they are gone.
	DeletionPolicyWaitForTermination DeletionPolicy = "WaitForTermination"
	// DeletionPolicyOrphan leaves the objects in the cluster.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// DeleteOptions configure Delete.
type DeleteOptions struct {
	// Policy is the owner's deletion policy; MirrorPrune when empty.
	Policy DeletionPolicy
	// Prune is the owner's prune setting, which MirrorPrune follows.
	Prune bool
	// WaitTimeout bounds WaitForTermination; DefaultWaitTimeout when zero.
	WaitTimeout time.Duration
}

// Delete removes an owner's whole inventory when the owner itself is
// deleted, following its deletion policy, with the same rules as Prune
// (prune: disabled and foreign objects are kept).
func (m *Manager) Delete(ctx context.Context, entries []inventory.Entry, opts DeleteOptions) (*ChangeSet, error) {
	prune := PruneOptions{WaitTimeout: opts.WaitTimeout}
	switch opts.Policy {
	case DeletionPolicyOrphan:
		return &ChangeSet{}, nil
	case "", DeletionPolicyMirrorPrune:
		if !opts.Prune {
			return &ChangeSet{}, nil
		}
	case DeletionPolicyDelete:
	case DeletionPolicyWaitForTermination:
		prune.WaitForTermination = true
	default:
		return &ChangeSet{}, fmt.Errorf("unknown deletion policy %q", opts.Policy)
	}
	return m.Prune(ctx, entries, prune)
}
