package ssa

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/parallel"
)

// Fingerprints tell whether an object is still as an apply left it, without
// a dry run: the fingerprint of a live object digests the fields that the
// field manager owns through apply, and their values. Fields that other
// managers own (a Deployment's revision annotation, a Service's cluster IP,
// any status) do not change it; an edit of an owned field does, since the
// editor takes the field over, and so does the object's deletion.
//
// An object the manager owns nothing of (one applied with the IfNotPresent
// policy, say) is digested whole, less its volatile fields.

// fingerprintIgnored is the fingerprint of an object applied with the
// Ignore policy: nothing about it is ever checked.
const fingerprintIgnored = "ignored"

// Fingerprint returns the fingerprint of live, an object read from the
// cluster or returned by an apply, for the Manager's field manager.
func (m *Manager) Fingerprint(live *unstructured.Unstructured) string {
	return fingerprint(live, m.fieldManager)
}

// FingerprintAs returns the fingerprint of live for the field manager
// manager, as Manager.Fingerprint does for its own.
func FingerprintAs(live *unstructured.Unstructured, manager string) string {
	return fingerprint(live, manager)
}

func fingerprint(live *unstructured.Unstructured, manager string) string {
	sum := sha256.New()
	entry := appliedEntry(live, manager)
	var owned *fieldpath.Set
	if entry != nil {
		owned, _ = entry.fieldSet()
	}
	if owned == nil {
		writeValue(sum, withoutVolatile(live))
		return "whole:" + hex.EncodeToString(sum.Sum(nil))
	}
	fmt.Fprintf(sum, "%s\x00%s\x00", live.GetAPIVersion(), entry.APIVersion)
	digestOwned(sum, live.Object, owned)
	return "owned:" + hex.EncodeToString(sum.Sum(nil))
}

// digestOwned writes to w every path of owned with the value it has in v.
// A path that is both a member and a parent (an owned list item whose
// fields are owned too, "." in managedFields) counts as a parent: its
// fields are digested one by one, not the whole item.
func digestOwned(w interface{ Write([]byte) (int, error) }, v any, owned *fieldpath.Set) {
	owned.Members.Iterate(func(pe fieldpath.PathElement) {
		if _, parent := owned.Children.Get(pe); parent {
			return
		}
		child, found := childValue(v, pe)
		fmt.Fprintf(w, "m%s\x00%t\x00", pe.String(), found)
		if found {
			writeValue(w, child)
		}
	})
	owned.Children.Iterate(func(pe fieldpath.PathElement) {
		set, _ := owned.Children.Get(pe)
		child, found := childValue(v, pe)
		fmt.Fprintf(w, "c%s\x00%t\x00", pe.String(), found)
		if found {
			digestOwned(w, child, set)
		}
	})
}

// childValue returns the value that pe names in v: a map's field, or a
// list's item by key, value or index.
func childValue(v any, pe fieldpath.PathElement) (any, bool) {
	if pe.FieldName != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		c, ok := m[*pe.FieldName]
		return c, ok
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	return findItem(list, pe)
}

// writeValue writes v as JSON, whose maps have sorted keys.
func writeValue(w interface{ Write([]byte) (int, error) }, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "!%v", err)
		return
	}
	_, _ = w.Write(data)
	_, _ = w.Write([]byte{0})
}

// Applied is an object as an apply left it: its inventory entry and its
// fingerprint then, and the resourceVersion it was last seen at with that
// fingerprint (empty when unknown).
type Applied struct {
	Entry           inventory.Entry
	Fingerprint     string
	ResourceVersion string
}

// Ignored tells whether the object was applied with the Ignore policy:
// nothing about it is ever checked.
func (a Applied) Ignored() bool {
	return a.Fingerprint == fingerprintIgnored
}

// verifyConcurrency bounds the reads of one Verify.
const verifyConcurrency = 8

// ErrDrifted is matched by the error of Verify when an object is not as the
// last apply left it.
var ErrDrifted = errors.New("an applied object changed")

// Verify reads every applied object and checks that its fingerprint is
// still the one the apply left. It returns the objects read (by inventory
// ID), for a health check to use, or an error that matches ErrDrifted when
// one changed or is gone. An object without a fingerprint counts as
// changed; an object applied with the Ignore policy is not read.
//
// With Options.Versions, an object still at the resourceVersion it was
// last seen at is not read (nothing about it changed), and Verify records
// in applied the version of each object it read and found unchanged.
func (m *Manager) Verify(ctx context.Context, applied []Applied) (map[string]*unstructured.Unstructured, error) {
	read := make([]*unstructured.Unstructured, len(applied))
	errs := make([]error, len(applied))
	panics := parallel.Do(ctx, len(applied), verifyConcurrency, func(i int) {
		if applied[i].Fingerprint != fingerprintIgnored && !m.unmoved(ctx, applied[i]) {
			read[i], errs[i] = m.verifyOne(ctx, applied[i])
		}
	})
	for _, p := range panics {
		errs[p.Index] = fmt.Errorf("verifying %s: %w", applied[p.Index].Entry.ID, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	live := make(map[string]*unstructured.Unstructured, len(applied))
	for i, obj := range read {
		if obj != nil {
			live[applied[i].Entry.ID] = obj
			applied[i].ResourceVersion = obj.GetResourceVersion()
		}
	}
	return live, nil
}

// unmoved reports whether Options.Versions says that a is still at the
// resourceVersion it was last seen at.
func (m *Manager) unmoved(ctx context.Context, a Applied) bool {
	if m.versions == nil || a.ResourceVersion == "" {
		return false
	}
	id, err := a.Entry.ObjMetadata()
	if err != nil {
		return false
	}
	gvk, err := a.Entry.GroupVersionKind()
	if err != nil {
		return false
	}
	version, ok := m.versions.ResourceVersion(ctx, gvk, id.Namespace, id.Name)
	return ok && version == a.ResourceVersion
}

func (m *Manager) verifyOne(ctx context.Context, a Applied) (*unstructured.Unstructured, error) {
	id, err := a.Entry.ObjMetadata()
	if err != nil {
		return nil, err
	}
	gvk, err := a.Entry.GroupVersionKind()
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err = m.client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: %s is gone", ErrDrifted, id.Subject())
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", id.Subject(), err)
	case a.Fingerprint == "" || m.Fingerprint(obj) != a.Fingerprint:
		return nil, fmt.Errorf("%w: %s", ErrDrifted, id.Subject())
	}
	return obj, nil
}
