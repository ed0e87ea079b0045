// Package plan says what applying a build would change in a cluster, from
// a server-side dry-run apply (ssa.Manager.Plan): each object created,
// drifted (with a unified diff of its YAML, Secret values masked) or
// deleted by the prune. `windlass diff` prints it; the web UI shows it.
package plan

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// SecretMask replaces every value of a Secret in what is shown.
const SecretMask = "***"

// Action is what applying would do to one object.
type Action string

// The actions of a plan.
const (
	Created Action = "created"
	Drifted Action = "drifted"
	Deleted Action = "deleted"
)

// Change is one object that applying would change.
type Change struct {
	// Subject names the object: Kind/namespace/name.
	Subject string
	// ID is the object's inventory ID.
	ID     string
	Action Action
	// Diff is the unified diff of a drifted object, live (-) to applied
	// (+); empty for the other actions.
	Diff string
}

// Preview is what applying an object's source revision would change in
// its cluster now.
type Preview struct {
	// Revision is the source revision built.
	Revision string
	// Changes are the objects the apply would create or change, then those
	// the prune would delete.
	Changes []Change
	// Objects counts the objects of the build.
	Objects int
}

// Changes returns the objects of planned that the apply would create or
// change; an object whose fields would only change owners is left out.
func Changes(planned []ssa.Planned) ([]Change, error) {
	var out []Change
	for _, p := range planned {
		switch p.Action {
		case ssa.ActionCreated:
			out = append(out, Change{Subject: p.Object.Subject(), ID: p.Object.ID(), Action: Created})
		case ssa.ActionConfigured:
			d, err := ObjectDiff(p.Live, p.Result)
			if err != nil {
				return nil, fmt.Errorf("comparing %s: %w", p.Object.Subject(), err)
			}
			if d != "" {
				out = append(out, Change{Subject: p.Object.Subject(), ID: p.Object.ID(), Action: Drifted, Diff: d})
			}
		}
	}
	return out, nil
}

// Deletions returns the entries of inv, the inventory of an object of kind
// owner, that are not in planned and whose live object deletes says would
// be deleted.
func Deletions(ctx context.Context, c client.Reader, inv []inventory.Entry, planned []ssa.Planned, owner string,
	deletes func(live *unstructured.Unstructured) bool) ([]Change, error) {
	var applied []inventory.Entry
	for _, p := range planned {
		applied = append(applied, inventory.Entry{ID: p.Object.ID(), Version: p.Version})
	}
	var out []Change
	for _, e := range inventory.Diff(inv, applied) {
		live, id, err := readEntry(ctx, c, e)
		if err != nil {
			return nil, fmt.Errorf("reading %s, which the %s applied: %w", e.ID, owner, err)
		}
		if live == nil || !deletes(live) {
			continue // gone, or no longer the controller's to delete
		}
		out = append(out, Change{Subject: id.Subject(), ID: e.ID, Action: Deleted})
	}
	return out, nil
}

// readEntry reads the live object of an inventory entry; nil when it does
// not exist.
func readEntry(ctx context.Context, c client.Reader, e inventory.Entry) (*unstructured.Unstructured, inventory.ObjMetadata, error) {
	id, err := e.ObjMetadata()
	if err != nil {
		return nil, id, err
	}
	gvk, _ := e.GroupVersionKind()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err = c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, live)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, id, nil // gone, or of a kind no longer served
	}
	return live, id, err
}

// ownedBy reports whether obj carries the owner labels.
func ownedBy(obj *unstructured.Unstructured, owner map[string]string) bool {
	labels := obj.GetLabels()
	for k, v := range owner {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Prunable returns what a prune of the objects of an owner (its labels)
// deletes: a live object with the owner's labels that does not disable
// pruning.
func Prunable(owner map[string]string) func(live *unstructured.Unstructured) bool {
	return func(live *unstructured.Unstructured) bool { return ownedBy(live, owner) && !ssa.PruneDisabled(live) }
}

// IsSecret reports whether obj is a core Secret.
func IsSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// ignoredFields are left out of the objects a diff compares.
var ignoredFields = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"metadata", "uid"},
	{"metadata", "creationTimestamp"},
	{"metadata", "deletionTimestamp"},
	{"metadata", "deletionGracePeriodSeconds"},
	{"metadata", "selfLink"},
	{"status"},
}

// ObjectDiff returns the unified diff of the YAML of live and desired,
// with the fields that change by themselves left out and Secret values
// masked; "" when they are the same.
func ObjectDiff(live, desired *unstructured.Unstructured) (string, error) {
	a, b := live.DeepCopy(), desired.DeepCopy()
	for _, o := range []*unstructured.Unstructured{a, b} {
		for _, f := range ignoredFields {
			unstructured.RemoveNestedField(o.Object, f...)
		}
	}
	if IsSecret(b) {
		maskSecretPair(a, b)
	}
	ya, err := yaml.Marshal(a.Object)
	if err != nil {
		return "", err
	}
	yb, err := yaml.Marshal(b.Object)
	if err != nil {
		return "", err
	}
	return UnifiedDiff(string(ya), string(yb), 3), nil
}

// maskSecretPair masks the values of two versions of a Secret, and the
// last-applied-configuration of a client-side apply, which holds them too: a value
// that is the same in both is SecretMask in both; one that changed is
// SecretMask before and SecretMask " (changed)" after.
func maskSecretPair(before, after *unstructured.Unstructured) {
	for _, field := range []string{"data", "stringData"} {
		a, _ := before.Object[field].(map[string]any)
		b, _ := after.Object[field].(map[string]any)
		for k, v := range b {
			if old, ok := a[k]; ok && old != v {
				b[k] = SecretMask + " (changed)"
			} else {
				b[k] = SecretMask
			}
		}
		for k := range a {
			a[k] = SecretMask
		}
	}
	for _, o := range []*unstructured.Unstructured{before, after} {
		if annotations := o.GetAnnotations(); annotations[corev1.LastAppliedConfigAnnotation] != "" {
			annotations[corev1.LastAppliedConfigAnnotation] = SecretMask
			o.SetAnnotations(annotations)
		}
	}
}
