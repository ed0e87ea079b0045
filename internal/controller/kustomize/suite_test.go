package kustomize

import (
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	// env is the test control plane, with the source and kustomize
	// controllers of the real manager running against it (main_test.go).
	env *testenv.Environment
	// logs holds what the controllers logged.
	logs *testutil.Logs
)

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
)

// dryRuns counts the server-side dry runs that the Kustomization
// controller's local apply client sends, by namespace.
var dryRuns = &testutil.RequestCounter{Match: testutil.IsDryRun}

// applies counts the server-side applies (not dry runs) that the
// Kustomization controller's local apply client sends, by namespace.
var applies = &testutil.RequestCounter{Match: testutil.IsApply}

// reads counts the reads of one named object (GET, not a list or a watch)
// that the controllers send, by namespace.
var reads = &testutil.RequestCounter{Match: testutil.IsNamedRead}

// waitForKs returns the Kustomization once cond holds for it, with the
// status rules checked.
func waitForKs(g *WithT, key client.ObjectKey, cond func(*kustomizev1.Kustomization) bool) *kustomizev1.Kustomization {
	return testutil.WaitFor(g, env.Client, &kustomizev1.Kustomization{ObjectMeta: objectMeta(key.Namespace, key.Name)}, cond)
}

// ksReady is a waitForKs condition: Ready at the given revision (any when
// empty) for the current generation.
func ksReady(revision string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool {
		return conditions.IsTrue(k, meta.ReadyCondition) && k.Status.ObservedGeneration == k.Generation &&
			(revision == "" || k.Status.LastAppliedRevision == revision)
	}
}

// ksReason is a waitForKs condition on Ready's reason.
func ksReason(status, reason string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool {
		c := conditions.Get(k, meta.ReadyCondition)
		return c != nil && string(c.Status) == status && c.Reason == reason
	}
}

// objectMeta names an object.
func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
