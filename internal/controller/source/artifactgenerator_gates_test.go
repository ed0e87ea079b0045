package source

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestExternalArtifact_GatesHoldOneArtifact: an ExternalArtifact declared
// ahead for a generator, with spec.gates, is adopted by it; while its gate
// is closed it publishes nothing new (Blocked=True, GateClosed) and keeps
// its last artifact, while the generator's other artifacts go on. Its
// gate opening publishes it at once, and so does removing its gates.
func TestExternalArtifact_GatesHoldOneArtifact(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	setGate(g, ns, "prod-freeze", false)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	mono := srv.MustInitRepo(t, "mono.git", "main")
	mono.MustCommit(t, "main", map[string]string{"apps/dev/app.yaml": "dev: 1\n", "apps/prod/app.yaml": "prod: 1\n"}, "one")
	g.Expect(env.Client.Create(ctx, mainBranch(newGitRepository(ns, "mono", base+"/mono.git")))).To(Succeed())
	prod := &sourcev1.ExternalArtifact{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"},
		Spec: sourcev1.ExternalArtifactSpec{
			SourceRef: &meta.NamespacedObjectKindReference{APIVersion: sourceextv1beta1.GroupVersion.String(),
				Kind: sourceextv1beta1.ArtifactGeneratorKind, Name: "apps"},
			Gates: []meta.NamespacedObjectReference{{Name: "prod-freeze"}},
		},
	}
	g.Expect(env.Client.Create(ctx, prod)).To(Succeed())
	gen := &sourceextv1beta1.ArtifactGenerator{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"},
		Spec: sourceextv1beta1.ArtifactGeneratorSpec{
			Sources:     []sourceextv1beta1.SourceReference{gitSource("mono", "mono")},
			PathPattern: "@mono/apps/{env}",
			OutputArtifacts: []sourceextv1beta1.OutputArtifact{{Name: "{env}",
				Copy: []sourceextv1beta1.CopyOperation{copyOp("@mono/apps/{env}/**", "@artifact/")}}},
		},
	}
	g.Expect(env.Client.Create(ctx, gen)).To(Succeed())

	got := waitForGenerator(g, gen, generatorReady)
	g.Expect(got.Status.Inventory).To(HaveLen(1), "the held artifact has nothing to list yet")
	g.Expect(eaFiles(t, g, ns, "dev")).To(Equal(map[string]string{"app.yaml": "dev: 1\n"}))
	held := externalArtifact(g, ns, "prod")
	g.Expect(held.Status.Artifact).To(BeNil())
	g.Expect(conditions.IsTrue(held, meta.BlockedCondition)).To(BeTrue())
	g.Expect(conditions.Reason(held, meta.BlockedCondition)).To(Equal(meta.GateClosedReason))
	g.Expect(conditions.Message(held, meta.BlockedCondition)).To(ContainSubstring("gate '" + ns + "/prod-freeze' is closed"))

	setGate(g, ns, "prod-freeze", true)
	adopted := waitForEA(g, ns, "prod", func(ea *sourcev1.ExternalArtifact) bool { return ea.Status.Artifact != nil })
	g.Expect(eaFiles(t, g, ns, "prod")).To(Equal(map[string]string{"app.yaml": "prod: 1\n"}))
	g.Expect(conditions.Has(adopted, meta.BlockedCondition)).To(BeFalse())
	g.Expect(metav1.IsControlledBy(adopted, got)).To(BeTrue(), "the generator adopted the declared ExternalArtifact")
	g.Expect(adopted.Spec.Gates).To(HaveLen(1), "the declared gates stay")
	got = waitForGenerator(g, gen, func(o *sourceextv1beta1.ArtifactGenerator) bool {
		return generatorReady(o) && len(o.Status.Inventory) == 2
	})
	first := adopted.Status.Artifact

	setGate(g, ns, "prod-freeze", false)
	mono.MustCommit(t, "main", map[string]string{"apps/dev/app.yaml": "dev: 2\n", "apps/prod/app.yaml": "prod: 2\n"}, "two")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mono"}}, "two")
	g.Eventually(func() map[string]string { return eaFiles(t, g, ns, "dev") }, timeout, interval).
		Should(Equal(map[string]string{"app.yaml": "dev: 2\n"}))
	held = externalArtifact(g, ns, "prod")
	g.Expect(conditions.IsTrue(held, meta.BlockedCondition)).To(BeTrue())
	g.Expect(held.Status.Artifact).To(Equal(first), "the held artifact keeps the one it had")
	waitForGenerator(g, gen, generatorReady)

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(held), held)).To(Succeed())
	held.Spec.Gates = nil
	g.Expect(env.Client.Update(ctx, held)).To(Succeed())
	waitForEA(g, ns, "prod", func(ea *sourcev1.ExternalArtifact) bool { return !ea.Status.Artifact.HasDigest(first.Digest) })
	g.Expect(eaFiles(t, g, ns, "prod")).To(Equal(map[string]string{"app.yaml": "prod: 2\n"}))
	g.Expect(conditions.Has(externalArtifact(g, ns, "prod"), meta.BlockedCondition)).To(BeFalse())
}

// waitForEA returns the ExternalArtifact ns/name once cond holds for it.
func waitForEA(g *WithT, ns, name string, cond func(*sourcev1.ExternalArtifact) bool) *sourcev1.ExternalArtifact {
	ea := &sourcev1.ExternalArtifact{}
	g.Eventually(func() bool {
		return env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ea) == nil && cond(ea)
	}, timeout, interval).Should(BeTrue(), "ExternalArtifact %s/%s", ns, name)
	return ea
}

// TestHeldBack runs the gates of one generated ExternalArtifact alone,
// against a fake client: whether it is held, and the Blocked condition
// written to the API.
func TestHeldBack(t *testing.T) {
	const blocked = "Fetching new revisions is blocked, gate 'apps/shut' is closed."
	stale := metav1.Condition{Type: meta.BlockedCondition, Status: metav1.ConditionTrue, Reason: meta.GateClosedReason, Message: blocked}
	tests := []struct {
		name     string
		gates    []meta.NamespacedObjectReference
		noCross  bool
		stale    bool
		wantHeld bool
		// wantReason is Blocked's reason afterwards, "" for none.
		wantReason, wantMessage string
	}{
		{name: "no gates: a stale Blocked goes", stale: true},
		{name: "open gates: Blocked goes", stale: true, gates: []meta.NamespacedObjectReference{{Name: "open"}, {Name: "ops", Namespace: "ops"}}},
		{name: "a closed gate holds", gates: []meta.NamespacedObjectReference{{Name: "open"}, {Name: "shut"}},
			wantHeld: true, wantReason: meta.GateClosedReason, wantMessage: blocked},
		{name: "a missing gate holds", gates: []meta.NamespacedObjectReference{{Name: "gone"}}, wantHeld: true,
			wantReason: meta.GateClosedReason, wantMessage: "Fetching new revisions is blocked, gate 'apps/gone' is missing."},
		{name: "a gate in another namespace is refused, and holds", noCross: true,
			gates: []meta.NamespacedObjectReference{{Name: "ops", Namespace: "ops"}}, wantHeld: true, wantReason: meta.AccessDeniedReason,
			wantMessage: "gate 'ops/ops' is in another namespace, and cross-namespace references are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			objs := []client.Object{}
			for _, k := range []struct {
				ns, name string
				opened   bool
			}{{"apps", "open", true}, {"apps", "shut", false}, {"ops", "ops", true}} {
				gt := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: k.name}}
				testutil.MarkGate(gt, k.opened)
				objs = append(objs, gt)
			}
			ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "prod"},
				Spec: sourcev1.ExternalArtifactSpec{Gates: tt.gates}}
			if tt.stale {
				ea.Status.Conditions = []metav1.Condition{stale}
			}
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(append(objs, ea)...).
				WithStatusSubresource(&sourcev1.ExternalArtifact{}).Build()
			r := &ArtifactGeneratorReconciler{Client: c, Events: &event.Recorder{Kubernetes: events.NewFakeRecorder(10)}, NoCrossNamespaceRefs: tt.noCross}
			read := &sourcev1.ExternalArtifact{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ea), read)).To(Succeed())

			held, err := r.heldBack(ctx, output{ea: read, before: read.DeepCopy()})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(held).To(Equal(tt.wantHeld))
			if !held {
				g.Expect(conditions.Has(read, meta.BlockedCondition)).To(BeFalse(), "published with the artifact")
				return
			}
			stored := &sourcev1.ExternalArtifact{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ea), stored)).To(Succeed())
			g.Expect(conditions.IsTrue(stored, meta.BlockedCondition)).To(BeTrue())
			g.Expect(conditions.Reason(stored, meta.BlockedCondition)).To(Equal(tt.wantReason))
			g.Expect(conditions.Message(stored, meta.BlockedCondition)).To(Equal(tt.wantMessage))
		})
	}
}
