package kustomize

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/versions"
)

// With a VersionReader (the reconciler's Versions), a run with nothing new
// sends no request about the objects applied to the local cluster: Verify
// reads only the objects whose resourceVersion moved since they were last
// seen as applied, and the health check reads only the objects whose
// version moved since they were last seen healthy. A version is the
// object's whole state, its status included: an object whose status
// changes is read again. Objects on a remote cluster (spec.kubeConfig) are
// read as before.

// healthyVersions remembers, per Kustomization, the resourceVersion at
// which each checked object was last Current.
type healthyVersions struct {
	seen versions.Seen[health.ObjectRef]
}

// toCheck returns the refs that must be checked: those not known to be
// Current at the version versions gives them now.
func (h *healthyVersions) toCheck(ctx context.Context, key types.NamespacedName, refs []health.ObjectRef,
	versions ssa.VersionReader) []health.ObjectRef {
	known := h.seen.Known(key, "")
	if len(known) == 0 {
		return refs
	}
	var out []health.ObjectRef
	for _, ref := range refs {
		gvk, err := ref.GroupVersionKind()
		if err != nil {
			out = append(out, ref)
			continue
		}
		was, ok := known[ref]
		now, seen := versions.ResourceVersion(ctx, gvk, ref.Namespace, ref.Name)
		if !ok || !seen || was != now {
			out = append(out, ref)
		}
	}
	return out
}

// record remembers the versions at which the objects of result are
// Current, and forgets the others.
func (h *healthyVersions) record(key types.NamespacedName, result health.Result) {
	current := map[health.ObjectRef]string{}
	var others []health.ObjectRef
	for _, s := range result {
		if s.Status == health.Current && s.ResourceVersion != "" {
			current[s.Ref] = s.ResourceVersion
		} else {
			others = append(others, s.Ref)
		}
	}
	h.seen.Record(key, "", current, others)
}

// forget drops what is remembered of key.
func (h *healthyVersions) forget(key types.NamespacedName) {
	h.seen.Forget(key)
}

// recordingReader is a reader that keeps the unstructured objects it
// returned, by reference.
type recordingReader struct {
	client.Reader
	mu      sync.Mutex
	objects map[health.ObjectRef]*unstructured.Unstructured
}

// Get reads as the wrapped reader and keeps what it returned.
func (r *recordingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		ref := health.ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: key.Namespace, Name: key.Name}
		r.mu.Lock()
		if r.objects == nil {
			r.objects = map[health.ObjectRef]*unstructured.Unstructured{}
		}
		r.objects[ref] = u
		r.mu.Unlock()
	}
	return nil
}

// refreshVersions records, in the last complete apply of key, the
// resourceVersion of each object the health check read, or learnt the
// health of from the watch (verdicts, if not nil), that is still as that
// apply left it (its fingerprint unchanged): the next Verify need not read
// it because its status moved since the apply.
func (r *KustomizationReconciler) refreshVersions(key types.NamespacedName, reads *recordingReader, verdicts *health.Pending) {
	st, ok := r.applied.get(key)
	if !ok {
		return
	}
	id := func(ref health.ObjectRef) (string, bool) {
		gvk, err := ref.GroupVersionKind()
		return inventory.ObjMetadata{Namespace: ref.Namespace, Name: ref.Name, Group: gvk.Group, Kind: gvk.Kind}.ID(), err == nil
	}
	watched := map[string]versions.Health{}
	if verdicts != nil {
		for ref, h := range verdicts.Answered() {
			if key, ok := id(ref); ok {
				watched[key] = h
			}
		}
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	read := make(map[string]*unstructured.Unstructured, len(reads.objects))
	for ref, obj := range reads.objects {
		if key, ok := id(ref); ok {
			read[key] = obj
		}
	}
	for i, a := range st.objects {
		if a.Fingerprint == "" {
			continue
		}
		if obj, ok := read[a.Entry.ID]; ok && ssa.FingerprintAs(obj, kspec.FieldManager) == a.Fingerprint {
			st.objects[i].ResourceVersion = obj.GetResourceVersion()
		} else if h, ok := watched[a.Entry.ID]; ok && h.Fingerprint == a.Fingerprint {
			st.objects[i].ResourceVersion = h.ResourceVersion
		}
	}
}
