package release

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/testutil"
	objversions "github.com/windlass-dev/windlass/internal/versions"
)

// isList matches the lists of a collection (not watches).
func isList(r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Query().Has("watch") {
		return false
	}
	_, rest, ok := strings.Cut(r.URL.Path, "/namespaces/")
	return ok && strings.Count(rest, "/") == 1
}

// newestFixture is a fixture whose runner remembers the newest releases in
// a NewestCache over a real watch of release Secrets, and counts the lists
// of its requests.
func newestFixture(t *testing.T) (*fixture, *testutil.RequestCounter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	watch, err := objversions.New(env.Config, env.Client.RESTMapper(), ReleaseSecretsSelector)
	if err != nil {
		t.Fatalf("versions.New: %v", err)
	}
	go func() { _ = watch.Start(ctx) }()
	lists := &testutil.RequestCounter{Match: isList}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(lists.Wrap)
	counted, err := NewGetter(cfg)
	if err != nil {
		t.Fatalf("NewGetter: %v", err)
	}
	f := &fixture{storage: env.CreateNamespace(t), target: env.CreateNamespace(t)}
	if f.runner, err = New(counted, f.storage, WithSandbox(testSandbox(t)), WithNewestCache(NewNewestCache(watch, 0), "local/test")); err != nil {
		t.Fatalf("New: %v", err)
	}
	return f, lists
}

// recoverUntil asks RecoverPending until the newest release it returns is
// want (version and status), reading storage no more.
func recoverUntil(g Gomega, f *fixture, lists *testutil.RequestCounter, want string) *releasev1.Release {
	var last *releasev1.Release
	g.Eventually(func(g Gomega) {
		before := lists.In(f.storage)
		rel, recovered, err := f.runner.RecoverPending(context.Background(), "app")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(recovered).To(BeFalse())
		g.Expect(versions([]*releasev1.Release{rel})).To(Equal([]string{want}))
		g.Expect(lists.In(f.storage)).To(Equal(before), "answered without reading storage")
		last = rel
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	return last
}

// TestNewestCache: once the watch of release Secrets has seen the newest
// release, RecoverPending answers without reading storage, with a summary
// (the chart's metadata, the manifest and values, no templates); an
// action of the runner, a new version written by another process and a
// status changed by another process are each seen at the next question
// that the watch allows, never an older release after a newer one.
func TestNewestCache(t *testing.T) {
	g := NewWithT(t)
	f, lists := newestFixture(t)
	f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "one"})

	rel := recoverUntil(g, f, lists, "v1=deployed")
	g.Expect(rel.Chart.Metadata.Version).To(Equal("1.0.0"))
	g.Expect(rel.Chart.Templates).To(BeEmpty(), "a summary keeps the chart's metadata only")
	g.Expect(rel.Manifest).To(ContainSubstring("app-cm"))
	g.Expect(rel.Config).To(HaveKeyWithValue("greeting", "one"))
	rel.Info.Status = rcommon.StatusFailed // a caller's change stays its own
	recoverUntil(g, f, lists, "v1=deployed")

	f.upgrade(t, "app", basicChart(t, "1.0.1"), map[string]any{"greeting": "two"})
	rel, _, err := f.runner.RecoverPending(context.Background(), "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions([]*releasev1.Release{rel})).To(Equal([]string{"v2=deployed"}), "the runner's own action is never answered from before it")
	recoverUntil(g, f, lists, "v2=deployed")

	other, err := New(getter(t), f.storage, WithSandbox(testSandbox(t)))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.Upgrade(context.Background(), basicChart(t, "1.0.2"), map[string]any{"greeting": "three"}, UpgradeOptions{ReleaseName: "app"})
	g.Expect(err).NotTo(HaveOccurred())
	recoverUntil(g, f, lists, "v3=deployed")

	setStatus(t, f, "app", 3, rcommon.StatusPendingUpgrade)
	g.Eventually(func(g Gomega) {
		rel, recovered, err := f.runner.RecoverPending(context.Background(), "app")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(recovered).To(BeTrue(), "a pending release is read in full and recovered")
		g.Expect(rel.Info.Status).To(Equal(rcommon.StatusFailed))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	hist, err := f.runner.History("app", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hist[0].Chart.Templates).NotTo(BeEmpty(), "what was stored is the full release")
	recoverUntil(g, f, lists, "v3=failed")
}

// TestInstallRemembersTheRelease: the release an install stored is the
// newest without a read: once the watch of release Secrets holds the
// version the install wrote, RecoverPending answers it without a list.
func TestInstallRemembersTheRelease(t *testing.T) {
	g := NewWithT(t)
	f, lists := newestFixture(t)
	f.install(t, "app", basicChart(t, "1.0.0"), map[string]any{"greeting": "one"})

	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.storage, Name: secretName("app", 1)}, secret)).To(Succeed())
	g.Eventually(func() string {
		v, _ := f.runner.newest.versions.ResourceVersion(context.Background(), secretKind, f.storage, secret.Name)
		return v
	}, 30*time.Second, 50*time.Millisecond).Should(Equal(secret.ResourceVersion))
	before := lists.In(f.storage)
	rel, recovered, err := f.runner.RecoverPending(context.Background(), "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(recovered).To(BeFalse())
	g.Expect(versions([]*releasev1.Release{rel})).To(Equal([]string{"v1=deployed"}))
	g.Expect(rel.Config).To(HaveKeyWithValue("greeting", "one"))
	g.Expect(lists.In(f.storage)).To(Equal(before), "answered without reading storage")
}

// fakeVersions answers every Secret at version "1".
type fakeVersions struct{ missing map[string]bool }

func (v fakeVersions) ResourceVersion(_ context.Context, _ schema.GroupVersionKind, _, name string) (string, bool) {
	return "1", !v.missing[name]
}
func (fakeVersions) Synced(context.Context, schema.GroupVersionKind) bool { return true }

// TestNewestCacheBounds: the cache holds no more than its bound in bytes,
// dropping others for a new release; a release larger than the bound, or
// pending, is not kept; what one scope (identity) read serves it only, and
// a write forgets it for all.
func TestNewestCacheBounds(t *testing.T) {
	g := NewWithT(t)
	release := func(name, manifest string, status rcommon.Status) *releasev1.Release {
		return &releasev1.Release{Name: name, Version: 1, Manifest: manifest, Info: &releasev1.Info{Status: status}}
	}
	c := NewNewestCache(fakeVersions{missing: map[string]bool{
		secretName("a", 2): true, secretName("b", 2): true, secretName("c", 2): true, secretName("big", 2): true, secretName("p", 2): true}}, 6000)
	c.put("s", "ns", release("a", strings.Repeat("x", 1500), rcommon.StatusDeployed), "1")
	c.put("s", "ns", release("b", strings.Repeat("x", 1500), rcommon.StatusDeployed), "1")
	_, ok := c.get(context.Background(), "s", "ns", "a")
	g.Expect(ok).To(BeTrue())
	c.put("s", "ns", release("c", strings.Repeat("x", 1500), rcommon.StatusDeployed), "1")
	g.Expect(c.bytes).To(BeNumerically("<=", 6000))
	g.Expect(c.entries).To(HaveLen(2), "one was dropped for the third")
	_, ok = c.get(context.Background(), "s", "ns", "c")
	g.Expect(ok).To(BeTrue())

	c.put("s", "ns", release("big", strings.Repeat("x", 7000), rcommon.StatusDeployed), "1")
	_, ok = c.get(context.Background(), "s", "ns", "big")
	g.Expect(ok).To(BeFalse(), "larger than the bound")
	bigValues := release("big", "", rcommon.StatusDeployed)
	bigValues.Config = map[string]any{"blob": strings.Repeat("v", 7000)}
	c.put("s", "ns", bigValues, "1")
	_, ok = c.get(context.Background(), "s", "ns", "big")
	g.Expect(ok).To(BeFalse(), "values count toward the bound")
	c.put("s", "ns", release("p", "", rcommon.StatusPendingInstall), "1")
	_, ok = c.get(context.Background(), "s", "ns", "p")
	g.Expect(ok).To(BeFalse(), "pending: recovered from a full read")
	g.Expect(c.bytes).To(BeNumerically("<=", 6000))

	c2 := NewNewestCache(fakeVersions{}, 0)
	c2.put("s", "ns", release("a", "", rcommon.StatusDeployed), "1")
	_, ok = c2.get(context.Background(), "s", "ns", "a")
	g.Expect(ok).To(BeFalse(), "a next version exists")

	c3 := NewNewestCache(fakeVersions{missing: map[string]bool{secretName("a", 2): true}}, 0)
	c3.put("local/team-a/deployer", "ns", release("a", "", rcommon.StatusDeployed), "1")
	_, ok = c3.get(context.Background(), "local/team-b/deployer", "ns", "a")
	g.Expect(ok).To(BeFalse(), "a release read with one identity's rights is not handed to another")
	_, ok = c3.get(context.Background(), "local/team-a/deployer", "ns", "a")
	g.Expect(ok).To(BeTrue())
	c3.forget("ns", "a")
	_, ok = c3.get(context.Background(), "local/team-a/deployer", "ns", "a")
	g.Expect(ok).To(BeFalse(), "a write forgets the release for every scope")
}
