// Package check verifies the status rules of internal/reconcile on an
// object as the API server returns it. Every envtest story runs it on the
// objects it waits for (internal/testutil.WaitFor), so a controller that
// breaks a rule fails the story that caught it, with the rule's number.
//
// The rules:
//
//	STS001 status.observedGeneration is at most metadata.generation.
//	STS002 every condition's observedGeneration is at most metadata.generation.
//	STS003 once status.observedGeneration is the generation, Ready is there,
//	       written for that generation.
//	STS004 Stalled=True means Ready=False and Reconciling is not True.
//	STS005 Reconciling=True means Ready is not True.
//	STS006 Ready=True means no negative condition of the kind is True.
//	STS007 Ready that is not True has a reason and a message.
//	STS008 one writer per status: the status subresource has one field
//	       manager at most.
package check

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// Object is an object with kstatus conditions and an observed generation.
type Object interface {
	client.Object
	conditions.Getter
	GetObservedGeneration() int64
}

// rule is one status rule: it returns a description of what breaks it, or
// "".
type rule struct {
	id    string
	check func(obj Object, negative []string) string
}

var rules = []rule{
	{"STS001", observedGenerationNotAhead},
	{"STS002", conditionGenerationsNotAhead},
	{"STS003", readyForObservedGeneration},
	{"STS004", stalledIsNotReady},
	{"STS005", reconcilingIsNotReady},
	{"STS006", readyHasNoNegativeCondition},
	{"STS007", notReadySaysWhy},
	{"STS008", oneStatusWriter},
}

// Status checks obj against every rule; negative are the kind's
// abnormal-true conditions. It returns one error per broken rule, joined,
// or nil.
func Status(obj Object, negative ...string) error {
	var errs []error
	for _, r := range rules {
		if why := r.check(obj, negative); why != "" {
			errs = append(errs, fmt.Errorf("%s %s/%s: %s", r.id, obj.GetNamespace(), obj.GetName(), why))
		}
	}
	return errors.Join(errs...)
}

func observedGenerationNotAhead(obj Object, _ []string) string {
	if obj.GetObservedGeneration() > obj.GetGeneration() {
		return fmt.Sprintf("status.observedGeneration %d is ahead of metadata.generation %d", obj.GetObservedGeneration(), obj.GetGeneration())
	}
	return ""
}

func conditionGenerationsNotAhead(obj Object, _ []string) string {
	for _, c := range obj.GetConditions() {
		if c.ObservedGeneration > obj.GetGeneration() {
			return fmt.Sprintf("condition %s has observedGeneration %d, ahead of metadata.generation %d", c.Type, c.ObservedGeneration, obj.GetGeneration())
		}
	}
	return ""
}

func readyForObservedGeneration(obj Object, _ []string) string {
	if obj.GetObservedGeneration() != obj.GetGeneration() {
		return ""
	}
	ready := conditions.Get(obj, meta.ReadyCondition)
	switch {
	case ready == nil:
		return fmt.Sprintf("generation %d is observed but there is no Ready condition", obj.GetGeneration())
	case ready.ObservedGeneration != obj.GetGeneration():
		return fmt.Sprintf("generation %d is observed but Ready was written for generation %d", obj.GetGeneration(), ready.ObservedGeneration)
	}
	return ""
}

func stalledIsNotReady(obj Object, _ []string) string {
	if !conditions.IsTrue(obj, meta.StalledCondition) {
		return ""
	}
	if ready := conditions.Get(obj, meta.ReadyCondition); ready == nil || ready.Status != metav1.ConditionFalse {
		return "Stalled=True but Ready is not False"
	}
	if conditions.IsTrue(obj, meta.ReconcilingCondition) {
		return "Stalled=True and Reconciling=True"
	}
	return ""
}

func reconcilingIsNotReady(obj Object, _ []string) string {
	if conditions.IsTrue(obj, meta.ReconcilingCondition) && conditions.IsTrue(obj, meta.ReadyCondition) {
		return "Reconciling=True and Ready=True"
	}
	return ""
}

func readyHasNoNegativeCondition(obj Object, negative []string) string {
	if !conditions.IsTrue(obj, meta.ReadyCondition) {
		return ""
	}
	for _, t := range append([]string{meta.StalledCondition}, negative...) {
		if conditions.IsTrue(obj, t) {
			return fmt.Sprintf("Ready=True and %s=True", t)
		}
	}
	return ""
}

func notReadySaysWhy(obj Object, _ []string) string {
	ready := conditions.Get(obj, meta.ReadyCondition)
	if ready == nil || ready.Status == metav1.ConditionTrue {
		return ""
	}
	if ready.Reason == "" || ready.Message == "" {
		return fmt.Sprintf("Ready=%s without a reason or a message (reason %q)", ready.Status, ready.Reason)
	}
	return ""
}

func oneStatusWriter(obj Object, _ []string) string {
	writers := map[string]bool{}
	for _, f := range obj.GetManagedFields() {
		if f.Subresource == "status" {
			writers[f.Manager] = true
		}
	}
	if len(writers) > 1 {
		return fmt.Sprintf("the status has %d writers: %v", len(writers), keys(writers))
	}
	return ""
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
