package helm

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// dryRuns counts the server-side dry runs that the controllers send, by
// namespace.
var dryRuns = &testutil.RequestCounter{Match: testutil.IsDryRun}

// versionTable is a FieldsReader that answers from a map of
// "namespace/name" to fields version.
type versionTable map[string]string

func (v versionTable) FieldsVersion(_ context.Context, _ schema.GroupVersionKind, namespace, name string) (string, bool) {
	version, ok := v[namespace+"/"+name]
	return version, ok
}

// TestSyncedVersionsToCheck: an object is left out only when it was found
// in sync against the same basis and the watch holds it at the same
// version; a drifted object is compared again.
func TestSyncedVersionsToCheck(t *testing.T) {
	key := types.NamespacedName{Namespace: "apps", Name: "web"}
	cm := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("apps")
		u.SetName(name)
		return u
	}
	id := func(name string) inventory.ObjMetadata { return inventory.ObjMetadataOf(cm(name)) }
	for _, tc := range []struct {
		name     string
		record   func(*syncedVersions)
		basis    string
		versions versionTable
		want     []string
	}{
		{"nothing recorded", func(*syncedVersions) {}, "v1", versionTable{"apps/a": "5", "apps/b": "6"}, []string{"a", "b"}},
		{"both unmoved", func(s *syncedVersions) {
			s.record(key, "v1", map[inventory.ObjMetadata]string{id("a"): "5", id("b"): "6"}, nil)
		}, "v1", versionTable{"apps/a": "5", "apps/b": "6"}, []string{}},
		{"one moved", func(s *syncedVersions) {
			s.record(key, "v1", map[inventory.ObjMetadata]string{id("a"): "5", id("b"): "6"}, nil)
		}, "v1", versionTable{"apps/a": "5", "apps/b": "7"}, []string{"b"}},
		{"one gone from the watch", func(s *syncedVersions) {
			s.record(key, "v1", map[inventory.ObjMetadata]string{id("a"): "5", id("b"): "6"}, nil)
		}, "v1", versionTable{"apps/a": "5"}, []string{"b"}},
		{"another basis", func(s *syncedVersions) {
			s.record(key, "v1", map[inventory.ObjMetadata]string{id("a"): "5", id("b"): "6"}, nil)
		}, "v2", versionTable{"apps/a": "5", "apps/b": "6"}, []string{"a", "b"}},
		{"drifted since", func(s *syncedVersions) {
			s.record(key, "v1", map[inventory.ObjMetadata]string{id("a"): "5", id("b"): "6"}, nil)
			s.record(key, "v1", nil, []inventory.ObjMetadata{id("a")})
		}, "v1", versionTable{"apps/a": "5", "apps/b": "6"}, []string{"a"}},
		{"a new basis forgets the old", func(s *syncedVersions) {
			s.record(key, "v1", map[inventory.ObjMetadata]string{id("a"): "5", id("b"): "6"}, nil)
			s.record(key, "v2", map[inventory.ObjMetadata]string{id("b"): "6"}, nil)
		}, "v2", versionTable{"apps/a": "5", "apps/b": "6"}, []string{"a"}},
		{"forgotten", func(s *syncedVersions) {
			s.record(key, "v1", map[inventory.ObjMetadata]string{id("a"): "5", id("b"): "6"}, nil)
			s.forget(key)
		}, "v1", versionTable{"apps/a": "5", "apps/b": "6"}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var s syncedVersions
			tc.record(&s)
			got := s.toCheck(context.Background(), key, tc.basis, []*unstructured.Unstructured{cm("a"), cm("b")}, tc.versions)
			names := []string{}
			for _, o := range got {
				names = append(names, o.GetName())
			}
			g.Expect(names).To(Equal(tc.want))
		})
	}
}

// TestDriftDetectionLeavesOutObjectsThatDidNotMove: once drift detection
// found a release's objects in sync and the watch of versions holds them,
// a run sends no dry run, nor after another manager wrote a field of its
// own; an object whose release fields were edited since is compared, and
// its drift corrected, again.
func TestDriftDetectionLeavesOutObjectsThatDidNotMove(t *testing.T) {
	g := NewWithT(t)
	ns, hr, got := deployedWithDriftDetection(t, g)
	key := client.ObjectKeyFromObject(hr)
	g.Expect(conditions.Reason(got, helmv2.DriftedCondition)).To(Equal(helmv2.NoDriftDetectedReason))

	// The first runs start the watches of the release's kinds; once they
	// hold the objects, a run compares nothing.
	runs := 0
	g.Eventually(func() int {
		before := dryRuns.In(ns)
		runs++
		reconcileAndWait(g, hr, fmt.Sprintf("quiet-%d", runs))
		return dryRuns.In(ns) - before
	}, testutil.WaitTimeout).Should(BeZero())
	got = waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(conditions.Get(got, helmv2.DriftedCondition).Reason).To(Equal(helmv2.NoDriftDetectedReason))

	// A write of another manager's own field (as a controller writes a
	// status) moves the object's version but none of the release's
	// fields: the runs after it compare nothing either.
	cm := configMap(g, ns, "app-cm")
	cm.Annotations["example.com/note"] = "another manager's"
	g.Expect(env.Client.Update(context.Background(), cm, client.FieldOwner("annotator"))).To(Succeed())
	before := dryRuns.In(ns)
	for i := range 3 {
		reconcileAndWait(g, hr, fmt.Sprintf("annotated-%d", i))
	}
	g.Expect(dryRuns.In(ns)).To(Equal(before), "another manager's field is not the release's")

	cm = configMap(g, ns, "app-cm")
	cm.Data["greeting"] = "changed by hand"
	g.Expect(env.Client.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	before = dryRuns.In(ns)
	reconcileUntil(g, hr, "edited", func(hr *helmv2.HelmRelease) bool {
		return conditions.Reason(hr, helmv2.DriftedCondition) == helmv2.DriftCorrectedReason
	})
	g.Expect(dryRuns.In(ns)).To(BeNumerically(">", before), "the edited object is compared again")
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "hello"))
}

// deployedWithDriftDetection installs the chart app 1.0.0 with a
// HelmRelease whose drift detection is enabled, in a new namespace, and
// returns the namespace, the HelmRelease and its status once Ready.
func deployedWithDriftDetection(t *testing.T, g *WithT) (string, *helmv2.HelmRelease, *helmv2.HelmRelease) {
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled}
	})
	return ns, hr, waitForHR(g, client.ObjectKeyFromObject(hr), hrReady("1.0.0"))
}

// reconcileAndWait requests a reconciliation of hr with token and waits
// until it is handled.
func reconcileAndWait(g *WithT, hr *helmv2.HelmRelease, token string) *helmv2.HelmRelease {
	testutil.RequestReconcile(g, env.Client, hr, token)
	return waitForHR(g, client.ObjectKeyFromObject(hr), func(hr *helmv2.HelmRelease) bool {
		return hr.Status.LastHandledReconcileAt == token
	})
}

// reconcileUntil requests reconciliations of hr (tokens prefix-1,
// prefix-2, ...) until one leaves it as cond says: drift detection sees a
// change once the watch of versions has seen it, which may be a run after
// the change.
func reconcileUntil(g *WithT, hr *helmv2.HelmRelease, prefix string, cond func(*helmv2.HelmRelease) bool) *helmv2.HelmRelease {
	var got *helmv2.HelmRelease
	runs := 0
	g.Eventually(func() bool {
		runs++
		got = reconcileAndWait(g, hr, fmt.Sprintf("%s-%d", prefix, runs))
		return cond(got)
	}, testutil.WaitTimeout).Should(BeTrue())
	return got
}

// TestAppliedInSync: what the run's action applied counts as found in sync
// only for the release it deployed, applied server-side.
func TestAppliedInSync(t *testing.T) {
	applied := map[inventory.ObjMetadata]string{{Namespace: "apps", Name: "a", Kind: "ConfigMap"}: "5"}
	release := func(version int, method string) *hrelease.Release {
		return &hrelease.Release{Version: version, ApplyMethod: method}
	}
	ssa, csa := string(hrelease.ApplyMethodServerSideApply), string(hrelease.ApplyMethodClientSideApply)
	for _, tc := range []struct {
		name string
		sc   releaseScope
		want bool
	}{
		{"deployed server-side", releaseScope{applied: applied, appliedVersion: 2, last: release(2, ssa)}, true},
		{"nothing applied", releaseScope{appliedVersion: 2, last: release(2, ssa)}, false},
		{"another release since (a rollback)", releaseScope{applied: applied, appliedVersion: 2, last: release(3, ssa)}, false},
		{"applied client-side", releaseScope{applied: applied, appliedVersion: 2, last: release(2, csa)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(appliedInSync(&tc.sc)).To(Equal(tc.want))
		})
	}
}
