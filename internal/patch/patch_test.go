package patch

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

func TestPatchWritesFinalizersAndStatusAndKeepsLocalState(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{
			URL:      "https://example.com/repo",
			Interval: metav1.Duration{Duration: 60_000_000_000},
		},
	}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())

	h := NewHelper(obj, env.Client)
	g.Expect(h.Written()).To(BeEmpty(), "nothing sent yet")
	controllerutil.AddFinalizer(obj, meta.Finalizer)
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "stored")
	obj.Status.ObservedGeneration = obj.Generation
	g.Expect(h.Patch(ctx, obj)).To(Succeed())
	g.Expect(conditions.IsTrue(obj, meta.ReadyCondition)).To(BeTrue(), "the local object keeps its state")

	got := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.Finalizers).To(ContainElement(meta.Finalizer))
	g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(h.Written()).To(Equal(got.ResourceVersion), "the version the last patch left")
	g.Expect(obj.ResourceVersion).NotTo(Equal(got.ResourceVersion), "the local object is not overwritten")

	rv := got.ResourceVersion
	g.Expect(h.Patch(ctx, obj)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	g.Expect(got.ResourceVersion).To(Equal(rv), "nothing changed, so nothing is sent")
	g.Expect(h.Written()).To(Equal(rv))
}

func TestPatchOfDeletedObjectStatusIsNotAnError(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns},
		Spec:       sourcev1.GitRepositorySpec{URL: "https://example.com/repo", Interval: metav1.Duration{Duration: 60_000_000_000}},
	}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	h := NewHelper(obj, env.Client)
	g.Expect(env.Client.Delete(ctx, obj)).To(Succeed())
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "stored")
	g.Expect(h.Patch(ctx, obj)).To(Succeed())
}

func TestChangesNamesTheChangedStatusFields(t *testing.T) {
	base := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: "default"}}
	base.Status.ObservedGeneration = 1
	tests := []struct {
		name   string
		change func(*sourcev1.GitRepository)
		fields []string
		others bool
	}{
		{name: "nothing", change: func(*sourcev1.GitRepository) {}},
		{name: "conditions and the observed generation", fields: []string{"conditions", "observedGeneration"},
			change: func(o *sourcev1.GitRepository) {
				conditions.MarkTrue(o, meta.ReadyCondition, meta.SucceededReason, "stored")
				o.Status.ObservedGeneration = 2
			}},
		{name: "a finalizer", others: true,
			change: func(o *sourcev1.GitRepository) { controllerutil.AddFinalizer(o, meta.Finalizer) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := base.DeepCopy()
			h := NewHelper(obj, env.Client)
			tt.change(obj)
			fields, others, err := h.Changes(obj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fields).To(Equal(tt.fields))
			g.Expect(others).To(Equal(tt.others))
		})
	}
}
