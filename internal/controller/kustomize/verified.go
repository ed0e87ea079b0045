package kustomize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// The memory of the last complete apply (see lastapply.go) is lost with
// the process that held it: a restart, or the replica that takes a
// Kustomization over when another goes, used to build, dry-run and read
// every object once more. A run that ends Ready leaves in status.verified
// what it is sure of: the inputs, the output, and the resourceVersions at
// which every object of the inventory was as the apply left it (and
// healthy, when health is checked). A process with no memory of the apply
// that finds the same inputs, and the same versions in its watch of the
// applied objects, takes the memory from there: nothing to build, apply or
// read. Any write to an object moves its resourceVersion, so the same
// versions prove that nothing changed since. The digests are left out when
// a Secret is among the inputs: a digest of a short secret could be
// guessed by whoever reads the status.
//
// The field changes only when the versions of the objects move (an apply,
// or a write to an object found as applied): a run that changes nothing
// else then writes the status for it, so that the next process finds it
// current. A run with nothing new writes nothing (see recordRun).

// watchSyncTimeout bounds the wait for the watch of a kind to sync, when a
// run takes the last apply from the status. A watch whose list fails ends
// the wait at once (see versions.Cache.WaitForSync); one of tens of
// thousands of objects, on an API server that a restart or a failover
// keeps busy, may take seconds: waiting is cheaper than reading and dry
// running every object of each Kustomization run meanwhile.
const watchSyncTimeout = 30 * time.Second

// VersionWatch tells the resourceVersion that the applied objects have now
// (see ssa.VersionReader), and can wait for the watch of a kind to hold
// them all.
type VersionWatch interface {
	ssa.VersionReader
	// WaitForSync starts the watch of kind gvk, unless it has started,
	// and waits until it has synced or ctx ends. It tells whether it has.
	WaitForSync(ctx context.Context, gvk schema.GroupVersionKind) bool
}

// verifiedApply returns what status.verified says at the end of a run of
// obj that ended Ready, having read inputs: nil when it cannot be sure.
func (r *KustomizationReconciler) verifiedApply(obj *kustomizev1.Kustomization, inputs *buildInputs) *kustomizev1.VerifiedApply {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	st, ok := r.applied.get(key)
	if !ok || inputs == nil || st.inputs != inputs.digest || secretInputs(obj) || r.localVersions(obj) == nil {
		return nil
	}
	entries := kspec.Inventory(obj)
	if !certified(st.objects, entries, healthRefs(obj, entries), r.healthy.seen.Known(key, "")) {
		return nil
	}
	return &kustomizev1.VerifiedApply{Inputs: statusDigest(st.inputs), Output: statusDigest(st.output), Objects: objectsDigest(st.objects)}
}

// certified tells whether objects, the applied objects at the versions
// they were last found as applied, are the inventory entries, every one
// with a version, and whether each one that refs checks for health was
// healthy (in healthy) at that version.
func certified(objects []ssa.Applied, entries []inventory.Entry, refs []health.ObjectRef, healthy map[health.ObjectRef]string) bool {
	if len(objects) != len(entries) {
		return false
	}
	versions := make(map[health.ObjectRef]string, len(objects))
	applied := make(map[inventory.Entry]bool, len(objects))
	for _, a := range objects {
		ref, ok := entryRef(a.Entry)
		if !ok || a.ResourceVersion == "" || a.Ignored() {
			return false
		}
		versions[ref], applied[a.Entry] = a.ResourceVersion, true
	}
	for _, e := range entries {
		if !applied[e] {
			return false
		}
	}
	for _, ref := range refs {
		if version, ok := versions[ref]; ok && healthy[ref] != version {
			return false
		}
	}
	return true
}

// restoreVerified makes the memory of the last complete apply of obj from
// status.verified, when it was made from inputs and every object of the
// inventory is still at the version it records, and returns it.
func (r *KustomizationReconciler) restoreVerified(ctx context.Context, obj *kustomizev1.Kustomization, inputs string) (appliedState, bool) {
	verified, versions := obj.Status.Verified, r.localVersions(obj)
	if verified == nil || versions == nil || verified.Inputs != statusDigest(inputs) {
		return appliedState{}, false
	}
	entries := kspec.Inventory(obj)
	objects, ok := objectsAtVersionsNow(ctx, versions, entries)
	if !ok || objectsDigest(objects) != verified.Objects {
		return appliedState{}, false
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	st := appliedState{
		inputs:    inputs,
		output:    strings.TrimPrefix(verified.Output, digestPrefix),
		objects:   objects,
		inventory: obj.Status.Inventory.DeepCopy(),
	}
	r.applied.set(key, st)
	r.healthy.seen.Record(key, "", healthyAt(objects, healthRefs(obj, entries)), nil)
	ctrl.LoggerFrom(ctx).V(1).Info("Took the last apply from the status: nothing changed since", "objects", len(objects))
	return st, true
}

// healthyAt returns the version of each object of refs among objects: the
// versions at which status.verified says they were healthy.
func healthyAt(objects []ssa.Applied, refs []health.ObjectRef) map[health.ObjectRef]string {
	versions := make(map[health.ObjectRef]string, len(objects))
	for _, a := range objects {
		if ref, ok := entryRef(a.Entry); ok {
			versions[ref] = a.ResourceVersion
		}
	}
	healthy := make(map[health.ObjectRef]string, len(refs))
	for _, ref := range refs {
		if version, ok := versions[ref]; ok {
			healthy[ref] = version
		}
	}
	return healthy
}

// objectsAtVersionsNow returns the objects of entries at the version the watch
// gives each now, waiting a bounded time for the watch of each kind to
// sync; false when the watch does not hold one of them.
func objectsAtVersionsNow(ctx context.Context, versions VersionWatch, entries []inventory.Entry) ([]ssa.Applied, bool) {
	syncCtx, cancel := context.WithTimeout(ctx, watchSyncTimeout)
	defer cancel()
	synced := map[schema.GroupVersionKind]bool{}
	objects := make([]ssa.Applied, 0, len(entries))
	for _, e := range entries {
		id, err := e.ObjMetadata()
		if err != nil {
			return nil, false
		}
		gvk, err := e.GroupVersionKind()
		if err != nil {
			return nil, false
		}
		if _, asked := synced[gvk]; !asked {
			synced[gvk] = versions.WaitForSync(syncCtx, gvk)
		}
		if !synced[gvk] {
			return nil, false
		}
		version, ok := versions.ResourceVersion(ctx, gvk, id.Namespace, id.Name)
		if !ok {
			return nil, false
		}
		objects = append(objects, ssa.Applied{Entry: e, ResourceVersion: version})
	}
	return objects, true
}

// secretInputs tells whether a Secret is among what obj is built from.
func secretInputs(obj *kustomizev1.Kustomization) bool {
	if obj.Spec.Decryption != nil {
		return true
	}
	if pb := obj.Spec.PostBuild; pb != nil {
		for _, from := range pb.SubstituteFrom {
			if from.Kind == "Secret" {
				return true
			}
		}
	}
	return false
}

// digestPrefix names the algorithm of the digests of status.verified.
const digestPrefix = "sha256:"

// statusDigest returns a hex digest as status.verified shows it.
func statusDigest(hexDigest string) string {
	return digestPrefix + hexDigest
}

// objectsDigest digests the inventory entries of objects with their
// resourceVersions, in the order of their IDs.
func objectsDigest(objects []ssa.Applied) string {
	sorted := slices.SortedFunc(slices.Values(objects), func(a, b ssa.Applied) int { return strings.Compare(a.Entry.ID, b.Entry.ID) })
	sum := sha256.New()
	for _, a := range sorted {
		fmt.Fprintf(sum, "%s\x00%s\x00%s\x00", a.Entry.ID, a.Entry.Version, a.ResourceVersion)
	}
	return statusDigest(hex.EncodeToString(sum.Sum(nil)))
}
