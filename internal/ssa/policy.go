package ssa

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The per-object keys. Each is read from the object's annotations first and
// then from its labels; values are compared without regard to case.
const (
	// SSAKey selects the apply policy: Override, Merge, IfNotPresent or Ignore.
	SSAKey = "kustomize.toolkit.fluxcd.io/ssa"
	// ForceKey set to Enabled recreates the object when an apply fails on an
	// immutable field.
	ForceKey = "kustomize.toolkit.fluxcd.io/force"
	// PruneKey set to Disabled keeps the object when it leaves the source.
	PruneKey = "kustomize.toolkit.fluxcd.io/prune"
	// ReconcileKey set to Disabled is the legacy spelling of ssa: Ignore.
	ReconcileKey = "kustomize.toolkit.fluxcd.io/reconcile"

	// LastAppliedConfigAnnotation is where kubectl's client-side apply keeps
	// the whole object, Secret data included. It is never applied and never
	// quoted.
	LastAppliedConfigAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

	// valueEnabled and valueDisabled are the values of ForceKey, PruneKey and
	// ReconcileKey.
	valueEnabled  = "enabled"
	valueDisabled = "disabled"
)

// Policy says how an object is applied.
type Policy string

const (
	// PolicyOverride applies the object with server-side apply and takes
	// ownership of every field it sets, reverting other managers' changes to
	// them. It is the default.
	PolicyOverride Policy = "Override"
	// PolicyMerge applies only the fields that no other field manager owns
	// with a different value; see the package documentation.
	PolicyMerge Policy = "Merge"
	// PolicyIfNotPresent creates the object when it is absent and never
	// updates it.
	PolicyIfNotPresent Policy = "IfNotPresent"
	// PolicyIgnore leaves the object alone: it is neither applied nor pruned.
	PolicyIgnore Policy = "Ignore"
)

// metaValue returns the value of key in the object's annotations, else in
// its labels.
func metaValue(obj *unstructured.Unstructured, key string) (string, bool) {
	if v, ok := obj.GetAnnotations()[key]; ok {
		return v, true
	}
	v, ok := obj.GetLabels()[key]
	return v, ok
}

// hasValue reports whether key is set to want (case-insensitive) in the
// object's annotations or labels.
func hasValue(obj *unstructured.Unstructured, key, want string) bool {
	v, ok := metaValue(obj, key)
	return ok && strings.EqualFold(strings.TrimSpace(v), want)
}

// PolicyOf returns the apply policy the object asks for. The legacy
// reconcile: disabled means Ignore. An unknown ssa value is an error, so
// that a typo does not silently take over fields.
func PolicyOf(obj *unstructured.Unstructured) (Policy, error) {
	if hasValue(obj, ReconcileKey, valueDisabled) {
		return PolicyIgnore, nil
	}
	v, ok := metaValue(obj, SSAKey)
	if !ok {
		return PolicyOverride, nil
	}
	for _, p := range []Policy{PolicyOverride, PolicyMerge, PolicyIfNotPresent, PolicyIgnore} {
		if strings.EqualFold(strings.TrimSpace(v), string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown %s value %q: want Override, Merge, IfNotPresent or Ignore", SSAKey, v)
}

// ignored reports whether the object asks to be left alone.
func ignored(obj *unstructured.Unstructured) bool {
	p, err := PolicyOf(obj)
	return err == nil && p == PolicyIgnore
}

// ForceEnabled reports whether the object asks to be recreated when an
// apply fails on an immutable field.
func ForceEnabled(obj *unstructured.Unstructured) bool {
	return hasValue(obj, ForceKey, valueEnabled)
}

// PruneDisabled reports whether the object asks not to be pruned.
func PruneDisabled(obj *unstructured.Unstructured) bool {
	return hasValue(obj, PruneKey, valueDisabled)
}
