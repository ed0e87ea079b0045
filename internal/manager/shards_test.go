package manager

import (
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// selectors returns the label selector of each kind's cache in opts.
func selectors(g Gomega, o Options, member string) map[string]string {
	opts, err := o.cacheOptions(member)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for obj, by := range opts.ByObject {
		out[kindOf(obj)] = by.Label.String()
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
	got := selectors(g, o, "r1")
	g.Expect(got).To(Equal(map[string]string{
		"Kustomization":         "shard.windlass.dev/holder=r1",
		"HelmRelease":           "shard.windlass.dev/holder=r1",
		"ImageUpdateAutomation": "shard.windlass.dev/holder=r1",
	}), "the sources, Gates, Receivers, Alerts, Providers and image policies are read across replicas: cached in full")

	withUI := o
	withUI.UIAddr = "127.0.0.1:9880"
	g.Expect(selectors(g, withUI, "r1")).To(BeEmpty(), "a replica that serves the UI caches every object, for its overview")

	o.WatchLabelSelector = "team=a"
	got = selectors(g, o, "r1")
	g.Expect(got).To(HaveKeyWithValue("Kustomization", "shard.windlass.dev/holder=r1,team=a"))
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
