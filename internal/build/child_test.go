package build

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/isolate"
)

// manyConfigMaps returns a kustomization of n ConfigMaps in one file,
// each with a value of size bytes: kustomize's time grows with the square
// of n.
func manyConfigMaps(n, size int) map[string]string {
	var b strings.Builder
	value := strings.Repeat("x", size)
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  key: %s\n", i, value)
	}
	return map[string]string{"big/kustomization.yaml": "resources: [all.yaml]\n", "big/all.yaml": b.String()}
}

// A build in a process of its own gives what a build in this process
// gives: documents, in-memory files, build metadata and errors alike.
func TestBuilderInAProcessOfItsOwnBuildsWhatThisProcessBuilds(t *testing.T) {
	_, root := newRoot(t)
	writeTree(t, root, baseAndOverlays)
	writeTree(t, root, map[string]string{"bad/kustomization.yaml": "resources: [nope.yaml]\n"})
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	apart := NewBuilder(Limits{InProcess: -1}, nil)
	for _, tc := range []struct {
		name string
		path string
		opts Options
	}{
		{"overlay with options", "overlays/prod", Options{NamePrefix: "a-", TargetNamespace: "team",
			Components: []string{"../../components/scale"}, CommonMetadata: &CommonMetadata{Labels: map[string]string{"team": "blue"}},
			Patches: []Patch{{Patch: "- op: add\n  path: /metadata/labels/p\n  value: x\n", Target: &Selector{Kind: "ConfigMap"}}}}},
		{"build metadata", "base", Options{BuildMetadata: []string{"originAnnotations"}}},
		{"in-memory files", "base", Options{Files: map[string][]byte{filepath.Join(real, "base/kustomization.yaml"): []byte("resources: [cm.yaml]\n")}}},
		{"a kustomize error", "bad", Options{}},
		{"a remote base", "base", Options{Components: []string{"https://example.com/c"}, NoRemoteBases: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			want, wantErr := BuildYAML(root, tc.path, tc.opts)
			got, err := apart.Build(context.Background(), root, tc.path, tc.opts)
			if wantErr != nil {
				g.Expect(err).To(MatchError(wantErr.Error()))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.YAML()).To(Equal(want))
			objs, err := got.Objects(nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(Decode(want)).To(Equal(objs))
		})
	}
}

// A build larger than the in-process bound runs apart: it does not hold
// the process's kustomize run, so a small build goes on meanwhile, and its
// context ends it.
func TestBuilderLargeBuildHoldsNoOtherAndEndsWithItsContext(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, manyConfigMaps(8000, 8))
	writeTree(t, root, map[string]string{"small/kustomization.yaml": "resources: [cm.yaml]\n", "small/cm.yaml": configMap("small")})
	b := NewBuilder(Limits{}, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	large := make(chan error, 1)
	go func() {
		_, err := b.Build(ctx, root, "big", Options{})
		large <- err
	}()
	g.Eventually(buildProcesses, time.Minute).Should(HaveLen(1))
	docs, err := b.Build(context.Background(), root, "small", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs.Len()).To(Equal(1))
	g.Expect(large).NotTo(Receive(), "8,000 objects take kustomize minutes")

	cancel()
	g.Eventually(large, 30*time.Second).Should(Receive(And(MatchError(ErrTimeout), MatchError(context.Canceled),
		MatchError(ContainSubstring(`kustomize build of "big"`)))))
	g.Expect(buildProcesses()).To(BeEmpty())
}

// buildProcesses returns the pids of this process's build processes.
func buildProcesses() []int { return isolate.Running(childRole) }

func TestBuilderKeepsBuildsWithinTheirLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		limits isolate.Limits
		want   error
		says   string
	}{
		{"longer than its time", manyConfigMaps(8000, 8), isolate.Limits{Time: time.Second}, ErrTimeout, "it took longer than 1s"},
		{"more memory than its limit", manyConfigMaps(32, 1<<20), isolate.Limits{Memory: 48 << 20}, ErrMemory, "(48 MiB)"},
		{"more output than its limit", manyConfigMaps(40, 64<<10), isolate.Limits{Output: 64 << 10}, ErrOutput, "(0 MiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, tc.files)
			_, err := NewBuilder(Limits{Limits: tc.limits}, nil).Build(context.Background(), root, "big", Options{})
			g.Expect(err).To(MatchError(tc.want))
			g.Expect(err).To(MatchError(ContainSubstring(tc.says)))
			g.Expect(err).To(MatchError(HavePrefix(`kustomize build of "big": `)))
		})
	}
}

// The input that decides where a build runs counts what kustomize reads:
// the kustomization files, the resources and patches they name, and a base
// each time it is included.
func TestInputCountsWhatTheBuildReads(t *testing.T) {
	cm := configMap("a")
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"a resource", map[string]string{"app/kustomization.yaml": "resources: [a.yaml]\n", "app/a.yaml": cm},
			len("resources: [a.yaml]\n") + len(cm)},
		{"a patch file", map[string]string{"app/kustomization.yaml": "resources: [a.yaml]\npatches: [{path: p.yaml}]\n", "app/a.yaml": cm, "app/p.yaml": cm},
			len("resources: [a.yaml]\npatches: [{path: p.yaml}]\n") + 2*len(cm)},
		{"a base included twice", map[string]string{
			"app/kustomization.yaml":      "resources: [one, two]\n",
			"app/one/kustomization.yaml":  "resources: [../base]\nnamePrefix: one-\n",
			"app/two/kustomization.yaml":  "resources: [../base]\nnamePrefix: two-\n",
			"app/base/kustomization.yaml": "resources: [a.yaml]\n", "app/base/a.yaml": cm},
			len("resources: [one, two]\n") + 2*len("resources: [../base]\nnamePrefix: one-\n") + 2*(len("resources: [a.yaml]\n")+len(cm))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, tc.files)
			p, err := prepare(root, "app", Options{})
			g.Expect(err).NotTo(HaveOccurred())
			overlay, err := p.fsys.ReadFile(filepath.Join(p.ov, "kustomization.yaml"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.input).To(BeEquivalentTo(tc.want + len(overlay)))
		})
	}
}
