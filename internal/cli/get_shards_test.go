package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/shard"
)

// shardsAt is the clock of the get shards tests: the Leases' renew times
// are set before it.
var shardsAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// runAt runs the windlass command line with args against the test control
// plane, with the clock at at, and returns its output.
func runAt(t *testing.T, at time.Time, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	now = func() time.Time { return at }
	t.Cleanup(func() { now = time.Now })
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// seedShards creates, in a new namespace, the Leases of two rings: the
// source controller's replicas source-0 (renewed 5s before shardsAt) and
// source-1 (2m before, for 15s: expired), and the kustomize and helm
// controllers' apply-0; a Lease of another use and one named after another
// holder, which are no members; and the Leases of buckets that they, and
// gone-0 (which has no member Lease), hold. In another namespace, it
// creates objects in those buckets, and one with no bucket yet. It returns
// the Leases' namespace.
func seedShards(t *testing.T, g *WithT) string {
	ctx := context.Background()
	leases, objects := env.CreateNamespace(t), env.CreateNamespace(t)
	create := func(obj client.Object) {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	lease := func(name, ring, holder string, renewedBefore time.Duration, seconds int32) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leases, Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds),
				RenewTime: ptr.To(metav1.NewMicroTime(shardsAt.Add(-renewedBefore)))}}
		if ring != "" {
			l.Labels = map[string]string{shard.RingLabel: ring}
		}
		create(l)
	}
	lease("windlass-shard-source-0", "windlass-source", "source-0", 5*time.Second, 15)
	lease("windlass-shard-source-1", "windlass-source", "source-1", 2*time.Minute, 15)
	lease("windlass-shard-apply-0", "windlass-kustomize-helm", "apply-0", time.Second, 30)
	lease("windlass-leader-election", "", "source-0", time.Second, 15)
	lease("windlass-shard-apply-9", "windlass-kustomize-helm", "apply-0", time.Second, 30)

	// The objects are held through the Leases of their buckets, a ring's
	// own: bucket 1 of each ring, 2 and 3 of one.
	bucketLease := func(ring string, bucket int, holder string) {
		create(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leases, Name: shard.BucketLeaseName(ring, bucket),
			Labels: map[string]string{shard.RingLabel: ring, shard.BucketLabel: shard.BucketValue(bucket)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}})
	}
	bucketLease("windlass-source", 1, "source-0")
	bucketLease("windlass-source", 2, "source-1")
	bucketLease("windlass-kustomize-helm", 1, "apply-0")
	bucketLease("windlass-kustomize-helm", 3, "gone-0")
	in := func(bucket string) map[string]string {
		if bucket == "" {
			return nil
		}
		return map[string]string{shard.BucketLabel: bucket}
	}
	interval := metav1.Duration{Duration: time.Hour}
	for name, bucket := range map[string]string{"a": "1", "b": "1", "c": "2", "d": ""} {
		create(&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: objects, Name: name, Labels: in(bucket)},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/" + name + ".git", Interval: interval}})
	}
	for name, bucket := range map[string]string{"x": "1", "y": "1", "z": "3"} {
		create(&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: objects, Name: name, Labels: in(bucket)},
			Spec: kustomizev1.KustomizationSpec{Interval: interval,
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "a"}}})
	}
	return leases
}

// TestGetShards: get shards lists the members of each ring from their
// Leases, live or since when expired, with the objects each holds in any
// namespace, and counts the objects whose holder is not live.
func TestGetShards(t *testing.T) {
	g := NewWithT(t)
	ns := seedShards(t, g)

	t.Run("as a table", func(t *testing.T) {
		for _, tt := range []struct{ args, golden string }{
			{"get shards", "get-shards"},
			{"get shards --no-header", "get-shards-no-header"},
			{"get shards -o yaml", "get-shards-yaml"},
		} {
			g := NewWithT(t)
			out, errOut, err := runAt(t, shardsAt, append(strings.Fields(tt.args), "-n", ns)...)
			g.Expect(err).NotTo(HaveOccurred(), tt.args)
			g.Expect(errOut).To(BeEmpty(), tt.args)
			expectGolden(t, g, tt.golden, out)
		}
	})
	t.Run("as JSON", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := runAt(t, shardsAt, "get", "shards", "-n", ns, "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		var report shardsReport
		g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed(), out)
		g.Expect(report.Members).To(HaveLen(3))
		expired := report.Members[2]
		g.Expect(expired.Member).To(Equal("source-1"))
		g.Expect(expired.Live).To(BeFalse())
		g.Expect(*expired.RenewTime).To(BeTemporally("==", shardsAt.Add(-2*time.Minute)))
		g.Expect(expired.LeaseDurationSeconds).To(Equal(int64(15)))
		g.Expect(expired.Objects).To(Equal(1))
		g.Expect(report.HeldByNoLiveMember).To(Equal(map[string]int{"source-1": 1, "gone-0": 1}))
	})
	t.Run("a member comes back to life", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := runAt(t, shardsAt.Add(-2*time.Minute), "get", "shards", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`\nwindlass-source\s+source-1\s+Live\s+0s\s+1\n`))
		g.Expect(out).To(HaveSuffix("1 object is held by no live member: 1 by gone-0\n"))
	})
	t.Run("a namespace without members says so", func(t *testing.T) {
		g := NewWithT(t)
		out, errOut, err := runAt(t, shardsAt, "get", "shards", "-n", env.CreateNamespace(t))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
		g.Expect(errOut).To(HavePrefix("no shard members found in namespace "))
	})
	t.Run("flags of other gets are one-line errors", func(t *testing.T) {
		for args, want := range map[string]string{
			"-A":                    "get shards takes no --all-namespaces",
			"-l a=b":                "get shards takes no --label-selector",
			"--status-selector a=b": "get shards takes no --status-selector",
			"--watch":               "get shards takes no --watch",
			"-o wide":               `invalid --output "wide" for get shards: choose table, yaml or json`,
			"extra":                 `unknown command "extra" for "windlass get shards"`,
		} {
			g := NewWithT(t)
			_, _, err := runAt(t, shardsAt, append([]string{"get", "shards", "-n", ns}, strings.Fields(args)...)...)
			g.Expect(err).To(MatchError(ContainSubstring(want)), args)
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"), args)
		}
	})
}

func TestRingControllers(t *testing.T) {
	for ring, want := range map[string][]string{
		"windlass":                                  manager.AllControllers,
		"windlass-kustomize":                        {"kustomize"},
		"windlass-source-kustomize-helm":            {"source", "kustomize", "helm"},
		"windlass-image-reflector-image-automation": {"image-reflector", "image-automation"},
		"windlass-":                                 nil,
		"windlass-kustomize-":                       nil,
		"windlass-kustom":                           nil,
		"windlass-source-cloud":                     nil,
		"other":                                     nil,
	} {
		g := NewWithT(t)
		got, ok := manager.RingControllers(ring)
		g.Expect(ok).To(Equal(want != nil), ring)
		if want != nil {
			g.Expect(got).To(Equal(want), ring)
		}
	}
	g := NewWithT(t)
	g.Expect(kinds.Names(ringKinds("windlass-kustomize-helm"))).To(Equal([]string{"Kustomization", "HelmRelease"}))
	g.Expect(kinds.Names(ringKinds("windlass-notification"))).To(Equal([]string{"Receiver"}), "Alerts and Providers have no holder")
	g.Expect(kinds.Names(ringKinds("windlass-unknown"))).To(Equal(kinds.Names(ringKinds("windlass"))), "a ring of another build: every kind")
}
