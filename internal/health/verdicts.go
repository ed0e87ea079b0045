package health

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verdicts answers, when it can, the health of an object without reading
// it: from a watch that judged the object as it was delivered (a versions
// cache made WithHealth(Judge, Watchable)). A Checker made WithVerdicts asks
// it first, for the objects no expression matches, and reads the others.
type Verdicts interface {
	// Verdict returns the health of the object ref names, of kind gvk,
	// when it is known without reading the object.
	Verdict(ctx context.Context, ref ObjectRef, gvk schema.GroupVersionKind) (ObjectStatus, bool)
}

// WithVerdicts returns a Checker like c that asks verdicts before it reads
// an object whose kind no expression matches.
func (c *Checker) WithVerdicts(verdicts Verdicts) *Checker {
	out := *c
	out.verdicts = verdicts
	return &out
}

// Judge returns kstatus' health of obj, as a status and its message (the
// judge of a versions cache made WithHealth).
func Judge(obj *unstructured.Unstructured) (status, message string) {
	s, msg := computeKstatus(obj)
	return string(s), msg
}

// watchableKinds are the built-in kinds whose health kstatus reads from
// their spec and status, whose objects are small (no data, no schema), and
// that health checks wait for: those a watch may judge as it delivers them.
var watchableKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:            true,
	{Group: "apps", Kind: "StatefulSet"}:           true,
	{Group: "apps", Kind: "DaemonSet"}:             true,
	{Group: "apps", Kind: "ReplicaSet"}:            true,
	{Group: "batch", Kind: "Job"}:                  true,
	{Group: "policy", Kind: "PodDisruptionBudget"}: true,
	{Kind: "Pod"}:                   true,
	{Kind: "Service"}:               true,
	{Kind: "PersistentVolumeClaim"}: true,
	{Kind: "ReplicationController"}: true,
}

// Watchable tells whether kind gk is one whose objects a watch may judge
// (see Verdicts): a built-in workload kind, whose health is in its status.
func Watchable(gk schema.GroupKind) bool {
	return watchableKinds[gk]
}
