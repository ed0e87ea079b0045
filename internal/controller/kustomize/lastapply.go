package kustomize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// A run whose inputs are those of the last complete apply, and whose
// objects are all as that apply left them, has nothing to build or apply:
// it reads the objects, compares their fingerprints (see ssa.Verify) and
// goes on to the health checks. A run with new inputs builds; when what it
// builds is what the last complete apply applied (a commit elsewhere in a
// monorepo, say) and the objects are as that apply left them, it applies
// nothing either. Drift, a deleted object, or a new build output take the
// whole pipeline. What is remembered is small (two digests and one
// fingerprint per object) and only an optimization: a run may always build
// and dry-run everything. A run with no memory of the last apply (after a
// restart, or on the replica that takes the Kustomization over) takes it
// from status.verified when it can (see verified.go).

// appliedState is what the last complete apply of a Kustomization left.
type appliedState struct {
	// inputs digests what the objects were built from (buildInputs.digest).
	inputs string
	// output digests what was applied, and how (outputDigest).
	output string
	// objects are the applied objects with their fingerprints.
	objects []ssa.Applied
	// inventory is the status inventory that apply recorded. A run that
	// ends in a quiet health recheck does not write it (see
	// recheckedFields): until its recheck writes it, it is here.
	inventory *kustomizev1.ResourceInventory
}

// restoreInventory gives obj the inventory of its last complete apply, when
// one is remembered: the status read may predate it, when the run that
// applied ended quietly (see recheckedFields).
func (r *KustomizationReconciler) restoreInventory(obj *kustomizev1.Kustomization) {
	if st, ok := r.applied.get(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}); ok && st.inventory != nil {
		obj.Status.Inventory = st.inventory.DeepCopy()
	}
}

// outputDigest identifies the objects a build produced together with the
// parts of the spec that say how they are applied.
func outputDigest(obj *kustomizev1.Kustomization, objs []*unstructured.Unstructured) (string, error) {
	sum := sha256.New()
	how, err := json.Marshal([]any{obj.Spec.ServiceAccountName, obj.Spec.KubeConfig, obj.Spec.Force, obj.Spec.Prune, obj.Spec.DeletionPolicy})
	if err != nil {
		return "", err
	}
	sum.Write(how)
	for _, o := range objs {
		data, err := o.MarshalJSON()
		if err != nil {
			return "", err
		}
		sum.Write([]byte{0})
		sum.Write(data)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// appliedStates holds the appliedState of each Kustomization.
type appliedStates struct {
	mu     sync.Mutex
	states map[types.NamespacedName]appliedState
}

func (s *appliedStates) get(key types.NamespacedName) (appliedState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.states[key]
	return st, ok
}

func (s *appliedStates) set(key types.NamespacedName, st appliedState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[types.NamespacedName]appliedState{}
	}
	s.states[key] = st
}

func (s *appliedStates) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, key)
}

// buildInputs is what a build reads besides the artifact: the variables of
// postBuild and the decryption keys. digest identifies them together with
// the artifact and the spec.
type buildInputs struct {
	// vars are the substitution variables; nil without postBuild.
	vars map[string]string
	// keys are the decryption Secret's data; nil without one.
	keys   map[string][]byte
	digest string
}

// readInputs reads the substitution variables and decryption keys of obj
// and digests them with the artifact and the spec.
func (r *KustomizationReconciler) readInputs(ctx context.Context, obj *kustomizev1.Kustomization, artifact *meta.Artifact) (*buildInputs, error) {
	vars, err := r.substituteVars(ctx, obj)
	if err != nil {
		return nil, err
	}
	in := &buildInputs{vars: vars}
	if d := obj.Spec.Decryption; d != nil && d.SecretRef != nil {
		var secret corev1.Secret
		key := types.NamespacedName{Namespace: obj.Namespace, Name: d.SecretRef.Name}
		if err := r.Get(ctx, key, &secret); err != nil {
			return nil, decryptionFailed(fmt.Errorf("reading the decryption secret '%s': %w", key, err))
		}
		in.keys = secret.Data
	}
	spec, err := json.Marshal(obj.Spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00%s\x00%s\x00", artifact.Digest, artifact.Revision, spec)
	for _, k := range slices.Sorted(maps.Keys(in.vars)) {
		fmt.Fprintf(sum, "v%s\x00%s\x00", k, in.vars[k])
	}
	for _, k := range slices.Sorted(maps.Keys(in.keys)) {
		fmt.Fprintf(sum, "k%s\x00%x\x00", k, sha256.Sum256(in.keys[k]))
	}
	in.digest = hex.EncodeToString(sum.Sum(nil))
	return in, nil
}

// upToDate reports whether the last complete apply of obj was made from
// inputs and every object is still as that apply left it; it then returns
// the objects it read, by inventory ID. While a health wait of the revision
// is under way nothing is read: the wait rechecks its objects, and drift is
// looked for once it ends.
func (r *KustomizationReconciler) upToDate(ctx context.Context, obj *kustomizev1.Kustomization, m *ssa.Manager, inputs string) (map[string]*unstructured.Unstructured, bool, error) {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	st, ok := r.applied.get(key)
	if !ok {
		st, ok = r.restoreVerified(ctx, obj, inputs)
	}
	if !ok || st.inputs != inputs {
		return nil, false, nil
	}
	if _, waiting := r.waits.get(key, obj.Status.LastAttemptedRevision); waiting {
		return nil, true, nil
	}
	return verify(ctx, m, st)
}

// verify reads the objects of st and reports whether each is as the apply
// left it, returning them by inventory ID when they are.
func verify(ctx context.Context, m *ssa.Manager, st appliedState) (map[string]*unstructured.Unstructured, bool, error) {
	live, err := m.Verify(ctx, st.objects)
	switch {
	case errors.Is(err, ssa.ErrDrifted):
		ctrl.LoggerFrom(ctx).V(1).Info("Applied objects changed, applying again", "drift", err.Error())
		return nil, false, nil
	case err != nil:
		return nil, false, outcome.Fail(kustomizev1.ReconciliationFailedReason, err)
	}
	return live, true, nil
}
