package manager

import (
	"k8s.io/apimachinery/pkg/runtime"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/kinds"
)

func TestShardOptionsValidate(t *testing.T) {
	auto := func(change func(o *Options)) Options {
		o := DefaultOptions()
		o.Shards.Mode = ShardsAuto
		change(&o)
		return o
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"off", DefaultOptions(), ""},
		{"auto", auto(func(*Options) {}), ""},
		{"by object", auto(func(o *Options) { o.Shards.By = "object" }), ""},
		{"unknown mode", auto(func(o *Options) { o.Shards.Mode = "3" }), "--shards=3: only auto"},
		{"unknown by", auto(func(o *Options) { o.Shards.By = "kind" }), `--shard-by: unknown sharding "kind"`},
		{"leader election", auto(func(o *Options) { o.EnableLeaderElection = true }), "exclude each other"},
		{"short lease", auto(func(o *Options) { o.Shards.LeaseDuration = time.Second }), "at least 3s"},
		{"bad name", auto(func(o *Options) { o.Shards.Name = "a/b" }), `"a/b" is not a label value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := tt.opts.Validate()
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// selectors returns the label selector of each kind's cache in opts: the
// ByObject selector, or the held buckets' for the kinds cached by bucket,
// with held holding buckets.
func selectors(g Gomega, o Options, held ...string) map[string]string {
	opts, selection, err := o.cacheOptions()
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for obj, by := range opts.ByObject {
		out[kindOf(obj)] = by.Label.String()
	}
	if selection == nil {
		g.Expect(opts.NewInformer).To(BeNil())
		return out
	}
	g.Expect(opts.NewInformer).NotTo(BeNil())
	g.Expect(selection.Set(held)).To(Succeed())
	byBucket := selection.For(kindObjects(cachedByHolder())...)
	for _, k := range kinds.All {
		if s := byBucket(k.New()); s != nil {
			g.Expect(out).NotTo(HaveKey(k.Kind), "a kind cached by bucket has no fixed selector")
			out[k.Kind] = s.Selector().String()
		}
	}
	return out
}

// kindObjects returns objs as runtime objects.
func kindObjects(objs []client.Object) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

func kindOf(obj client.Object) string {
	for _, k := range kinds.All {
		if reflect.TypeOf(k.New()) == reflect.TypeOf(obj) {
			return k.Kind
		}
	}
	return ""
}

func TestShardCacheSelectors(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	g.Expect(selectors(g, o, "")).To(BeEmpty(), "without sharding every object is cached")

	o.Shards.Mode = ShardsAuto
	got := selectors(g, o, "3", "17")
	g.Expect(got).To(Equal(map[string]string{
		"Kustomization":         "shard.windlass.dev/bucket in (17,3)",
		"HelmRelease":           "shard.windlass.dev/bucket in (17,3)",
		"ImageUpdateAutomation": "shard.windlass.dev/bucket in (17,3)",
	}), "the sources, Gates, Receivers, Alerts, Providers and image policies are read across replicas: cached in full")

	withUI := o
	withUI.UIAddr = "127.0.0.1:9880"
	g.Expect(selectors(g, withUI, "3")).To(BeEmpty(), "a replica that serves the UI caches every object, for its overview")

	o.WatchLabelSelector = "team=a"
	got = selectors(g, o, "3")
	g.Expect(got).To(HaveKeyWithValue("Kustomization", "shard.windlass.dev/bucket in (3),team=a"))
	g.Expect(got).To(HaveKeyWithValue("GitRepository", "team=a"))
	g.Expect(got).NotTo(HaveKey("Gate"))
}

func TestRingName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Options{}.ringName(AllControllers)).To(Equal("windlass"))
	g.Expect(Options{Controllers: []string{"kustomize"}}.ringName([]string{"kustomize"})).To(Equal("windlass-kustomize"))
	for _, subset := range [][]string{{"kustomize"}, {"source", "image-reflector"}, {"image-reflector", "image-automation"}} {
		back, ok := RingControllers(Options{Controllers: subset}.ringName(subset))
		g.Expect(ok).To(BeTrue())
		g.Expect(back).To(Equal(subset), "RingControllers reads back what ringName names")
	}
}

func TestHeldKinds(t *testing.T) {
	g := NewWithT(t)
	g.Expect(kinds.Names(HeldKinds([]string{"notification"}))).To(Equal([]string{"Receiver"}), "Alerts and Providers are read by every replica")
	g.Expect(kinds.Names(HeldKinds([]string{"kustomize", "gating"}))).To(Equal([]string{"Kustomization", "Gate"}))
}

// TestWillStoreAgain: an artifact that another address stored (or, when
// the replicas share one address, that this storage lacks) is stored
// again here when this process reconciles its source and the ring gives
// the source to this replica; not an ExternalArtifact's, a suspended
// source's, another replica's or one stored here.
func TestWillStoreAgain(t *testing.T) {
	storage, err := artifact.New(t.TempDir(), "here:9090", time.Minute, 2)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	repo := func(name string, suspended bool) *sourcev1.GitRepository {
		return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: sourcev1.GitRepositorySpec{Suspend: suspended}}
	}
	gone := func(kind string, o client.Object) meta.Artifact {
		a := storage.NewArtifactFor(kind, o, "main@sha1:1", "1.tar.gz")
		a.URL = "http://gone:9090/" + a.Path
		return a
	}
	mine := func(_ string, o metav1.Object) bool { return o.GetName() != "theirs" }
	ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ea"}}
	here := storage.NewArtifactFor(sourcev1.GitRepositoryKind, repo("app", false), "main@sha1:1", "1.tar.gz")
	ring, err := artifact.New(t.TempDir(), "source-controller.windlass.svc", time.Minute, 2)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ring.SetShared(true)
	lost := ring.NewArtifactFor(sourcev1.GitRepositoryKind, repo("app", false), "main@sha1:1", "1.tar.gz")
	stored := ring.NewArtifactFor(sourcev1.GitRepositoryKind, repo("stored", false), "main@sha1:1", "1.tar.gz")
	NewWithT(t).Expect(ring.Archive(&stored, t.TempDir(), nil)).To(Succeed())
	tests := []struct {
		name    string
		storage *artifact.Storage
		owns    func(string, metav1.Object) bool
		kind    string
		source  client.Object
		a       meta.Artifact
		want    bool
	}{
		{"stored by a replica that went", storage, mine, sourcev1.GitRepositoryKind, repo("app", false), gone(sourcev1.GitRepositoryKind, repo("app", false)), true},
		{"without shards", storage, nil, sourcev1.GitRepositoryKind, repo("app", false), gone(sourcev1.GitRepositoryKind, repo("app", false)), true},
		{"stored at this address", storage, mine, sourcev1.GitRepositoryKind, repo("app", false), here, false},
		{"another replica's", storage, mine, sourcev1.GitRepositoryKind, repo("theirs", false), gone(sourcev1.GitRepositoryKind, repo("theirs", false)), false},
		{"suspended", storage, mine, sourcev1.GitRepositoryKind, repo("app", true), gone(sourcev1.GitRepositoryKind, repo("app", true)), false},
		{"an ExternalArtifact", storage, mine, sourcev1.ExternalArtifactKind, ea, gone(sourcev1.ExternalArtifactKind, ea), false},
		{"the ring's address, stored by another replica", ring, mine, sourcev1.GitRepositoryKind, repo("app", false), lost, true},
		{"the ring's address, stored here", ring, mine, sourcev1.GitRepositoryKind, repo("stored", false), stored, false},
		{"no source controller here", nil, mine, sourcev1.GitRepositoryKind, repo("app", false), gone(sourcev1.GitRepositoryKind, repo("app", false)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(willStoreAgain(tt.storage, tt.owns, tt.kind, tt.source, tt.a)).To(Equal(tt.want))
		})
	}
}
