package kustomize

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestFirstHealthCheckIsQuiet checks, step by step with a fake client,
// that the first health check of a revision whose objects are in progress
// asks for a recheck without a status write, and that the recheck reports
// the wait.
func TestFirstHealthCheckIsQuiet(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", Generation: 1},
		Spec:       kustomizev1.KustomizationSpec{Wait: true, Interval: metav1.Duration{Duration: time.Hour}},
	}
	id := inventory.ObjMetadata{Namespace: "default", Name: "web", Group: "apps", Kind: "Deployment"}.ID()
	obj.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: id, Version: "v1"}}}
	obj.Status.LastAttemptedRevision = "main@sha1:1"
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj.DeepCopy(), inProgressDeployment("default", "web")).
		WithStatusSubresource(&kustomizev1.Kustomization{}).Build()
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, apimeta.RESTScopeNamespace)
	tgt := &impersonation.Target{Client: c, Mapper: mapper}
	r := &KustomizationReconciler{Client: c}

	first := r.checkHealth(ctx, obj, tgt, nil)
	g.Expect(outcome.IsQuiet(first)).To(BeTrue(), "the first check of a revision is quiet: %v", first)

	// The quiet run writes no status, and its recheck goes first.
	before := obj.DeepCopy()
	patcher := patch.NewHelper(before, c)
	res, err := r.runner().SummarizeAndPatch(ctx, obj, patcher, outcome.ResultEmpty, first, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", minHealthRecheck+10*time.Millisecond))
	g.Expect(res.Priority).To(Equal(ptr.To(urgentPriority)))
	stored := &kustomizev1.Kustomization{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
	g.Expect(conditions.Get(stored, meta.ReadyCondition)).To(BeNil(), "the quiet run patched the status")

	// The recheck reports the wait.
	second := r.checkHealth(ctx, obj, tgt, nil)
	var progressing *outcome.Progressing
	g.Expect(errors.As(second, &progressing)).To(BeTrue(), "still in progress: %v", second)
	g.Expect(progressing.Quiet).To(BeFalse())
	patcher = patch.NewHelper(stored, c)
	obj = stored.DeepCopy()
	obj.Status.LastAttemptedRevision = "main@sha1:1"
	res, err = r.runner().SummarizeAndPatch(ctx, obj, patcher, outcome.ResultEmpty, second, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Priority).To(Equal(ptr.To(urgentPriority)))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
	g.Expect(conditions.Get(stored, meta.ReadyCondition)).NotTo(BeNil())
	g.Expect(conditions.Reason(stored, meta.ReadyCondition)).To(Equal(meta.ProgressingReason))

	// A wait that has lasted polls at the normal priority.
	long := outcome.Progress(meta.ProgressingReason, errors.New("still in progress"), healthRecheckDelay(time.Minute, time.Hour))
	res, err = r.runner().SummarizeAndPatch(ctx, obj, patch.NewHelper(obj.DeepCopy(), c), outcome.ResultEmpty, long, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Priority).To(BeNil())

	// A new revision begins a new wait, quiet again.
	obj.Status.LastAttemptedRevision = "main@sha1:2"
	g.Expect(outcome.IsQuiet(r.checkHealth(ctx, obj, tgt, nil))).To(BeTrue())

	// Any other outcome asks for no priority (Reconcile makes it the
	// normal one).
	res, err = r.runner().SummarizeAndPatch(ctx, obj, patch.NewHelper(obj.DeepCopy(), c), outcome.ResultSuccess, nil, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Priority).To(BeNil())
	res, err = r.runner().SummarizeAndPatch(ctx, obj, patch.NewHelper(obj.DeepCopy(), c), outcome.ResultEmpty,
		outcome.Fail(kustomizev1.ReconciliationFailedReason, errors.New("refused")), time.Now())
	g.Expect(err).NotTo(HaveOccurred(), "a failure is retried after the retry interval")
	g.Expect(res.RequeueAfter).To(Equal(obj.GetRetryInterval()))
	g.Expect(res.Priority).To(BeNil(), "a failure asks for no priority")
}

// TestQuietRunLeavesTheInventoryToItsRecheck prunes an object in a run
// whose health check is quiet: the run writes no status, and its recheck
// (or a deletion) takes the inventory of that apply from memory, so that
// the recheck's one write records it.
func TestQuietRunLeavesTheInventoryToItsRecheck(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	web := inventory.ObjMetadata{Namespace: "default", Name: "web", Group: "apps", Kind: "Deployment"}.ID()
	gone := inventory.ObjMetadata{Namespace: "default", Name: "gone", Kind: "ConfigMap"}.ID()
	stored := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", Generation: 1},
		Spec:       kustomizev1.KustomizationSpec{Wait: true, Prune: true, Interval: metav1.Duration{Duration: time.Hour}},
	}
	stored.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: gone, Version: "v1"}, {ID: web, Version: "v1"}}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(stored.DeepCopy()).
		WithStatusSubresource(&kustomizev1.Kustomization{}).Build()
	r := &KustomizationReconciler{Client: c}
	key := client.ObjectKeyFromObject(stored)
	read := func() *kustomizev1.Kustomization {
		got := &kustomizev1.Kustomization{}
		g.Expect(c.Get(ctx, key, got)).To(Succeed())
		return got
	}

	obj := read()
	patcher := patch.NewHelper(obj, c)
	obj.Status.LastAttemptedRevision = "main@sha1:2"
	obj.Status.LastAppliedRevision = "main@sha1:2"
	recordInventory(obj, []inventory.Entry{{ID: web, Version: "v1"}})
	r.applied.set(key, appliedState{inputs: "inputs", output: "output", inventory: obj.Status.Inventory.DeepCopy()})
	quiet := outcome.ProgressQuietly(meta.ProgressingReason, errors.New("health check in progress"), minHealthRecheck)
	res, err := r.runner().SummarizeAndPatch(ctx, obj, patcher, outcome.ResultEmpty, quiet, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Priority).To(Equal(ptr.To(urgentPriority)))
	g.Expect(kspec.Inventory(read())).To(HaveLen(2), "the quiet run wrote nothing")

	// A deletion before the recheck deletes what the apply left.
	deleted := read()
	r.restoreInventory(deleted)
	g.Expect(kspec.Inventory(deleted)).To(Equal([]inventory.Entry{{ID: web, Version: "v1"}}))

	// The recheck writes it.
	recheck := read()
	patcher = patch.NewHelper(recheck, c)
	_, err = r.reconcileApply(ctx, recheck, &ksScope{current: true, source: gitSource("default", "app", "main@sha1:2")})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.runner().SummarizeAndPatch(ctx, recheck, patcher, outcome.ResultSuccess, nil, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	got := read()
	g.Expect(kspec.Inventory(got)).To(Equal([]inventory.Entry{{ID: web, Version: "v1"}}), "the pruned object left the stored inventory")
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:2"))
}

// inProgressDeployment returns a Deployment that wants a replica it does
// not have: in progress for kstatus.
func inProgressDeployment(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "replicas")
	return u
}
