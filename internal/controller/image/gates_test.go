package image

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestGates_FreezeImages: behind a closed gate a repository scans nothing
// and a policy keeps the image it elected, whatever the registry gets;
// once the gate opens, both catch up.
func TestGates_FreezeImages(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0")
	repo := imageRepository(ns, "app", reg.host+"/app")
	create(g, repo)
	policy := imagePolicy(ns, "app", "app", semverPolicy("*"))
	policy.Spec.Gates = []meta.NamespacedObjectReference{{Name: "freeze"}}
	create(g, policy)
	held := testutil.WaitFor(g, env.Client, policy, func(p *imagev1.ImagePolicy) bool {
		return conditions.IsFalse(p, meta.ApprovedCondition)
	})
	g.Expect(conditions.Message(held, meta.ApprovedCondition)).To(ContainSubstring("gate '" + ns + "/freeze' is missing"))
	g.Expect(held.Status.LatestRef).To(BeNil(), "nothing elected behind a closed gate")

	open := openGate(g, ns, "freeze")
	policy = testutil.WaitFor(g, env.Client, policy, func(p *imagev1.ImagePolicy) bool {
		return p.Status.LatestRef != nil && p.Status.LatestRef.Tag == "1.0.0"
	})

	// Frozen: the repository scans 1.1.0, the policy keeps 1.0.0.
	open(false)
	testutil.WaitFor(g, env.Client, policy, func(p *imagev1.ImagePolicy) bool { return conditions.IsFalse(p, meta.ApprovedCondition) })
	reg.push(t, "app", "1.1.0")
	testutil.WaitFor(g, env.Client, repo, func(r *imagev1.ImageRepository) bool {
		return r.Status.LastScanResult != nil && r.Status.LastScanResult.TagCount == 2
	})
	g.Consistently(func() string { return get(g, policy).Status.LatestRef.Tag }, 3*time.Second, 200*time.Millisecond).Should(Equal("1.0.0"))
	open(true)
	testutil.WaitFor(g, env.Client, policy, func(p *imagev1.ImagePolicy) bool { return p.Status.LatestRef.Tag == "1.1.0" })

	// A repository behind a missing gate lists nothing.
	blocked := imageRepository(ns, "blocked", reg.host+"/app")
	blocked.Spec.Gates = []meta.NamespacedObjectReference{{Name: "scans"}}
	lists := reg.lists.Load()
	create(g, blocked)
	blocked = testutil.WaitFor(g, env.Client, blocked, func(r *imagev1.ImageRepository) bool {
		return conditions.IsTrue(r, meta.BlockedCondition)
	})
	g.Expect(blocked.Status.LastScanResult).To(BeNil())
	g.Consistently(func() int64 { return reg.lists.Load() - lists }, 2*time.Second, 200*time.Millisecond).
		Should(BeNumerically("<=", 3), "only the other repository's scans")
	openGate(g, ns, "scans")
	testutil.WaitFor(g, env.Client, blocked, func(r *imagev1.ImageRepository) bool {
		return r.Status.LastScanResult != nil && r.Status.LastScanResult.TagCount == 2
	})
}

// openGate creates the Gate name, open by default, waits until the gating
// controller reports it open, and returns the function that opens or
// closes it (its default) and waits for the controller to say so.
func openGate(g Gomega, ns, name string) func(bool) {
	ctx := context.Background()
	obj := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateOpened}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	set := func(opened bool) {
		state := gatingv1alpha1.GateClosed
		if opened {
			state = gatingv1alpha1.GateOpened
		}
		patch := []byte(`{"spec":{"default":"` + string(state) + `"}}`)
		g.Expect(env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		testutil.WaitFor(g, env.Client, obj, func(o *gatingv1alpha1.Gate) bool {
			return o.Status.ObservedGeneration == o.Generation && o.IsOpened() == opened
		})
	}
	set(true)
	return set
}
