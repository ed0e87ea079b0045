package build

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// outsideTree is placed beside the root: nothing in it may ever be read.
var outsideTree = map[string]string{
	"outside/kustomization.yaml": "resources: [cm.yaml]\n",
	"outside/cm.yaml":            configMap("stolen"),
	"outside/patch.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  stolen: \"yes\"\n",
}

// recordReads collects every real path whose content is read.
func recordReads(t *testing.T) *[]string {
	t.Helper()
	var mu sync.Mutex
	reads := &[]string{}
	readHook = func(p string) {
		mu.Lock()
		defer mu.Unlock()
		*reads = append(*reads, p)
	}
	t.Cleanup(func() { readHook = nil })
	return reads
}

func TestBuildRefusesPathsOutsideRoot(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		path    string
		wantErr string
		remote  bool
	}{
		{
			name:    "resource climbing out of root",
			files:   map[string]string{"app/kustomization.yaml": "resources: [../../outside]\n"},
			wantErr: `entry "../../outside"`,
		},
		{
			name:    "resource climbing far out of root",
			files:   map[string]string{"app/kustomization.yaml": "resources: [../../../../../../etc]\n"},
			wantErr: `entry "../../../../../../etc"`,
		},
		{
			name:    "absolute resource",
			files:   map[string]string{"app/kustomization.yaml": "resources: [/etc/passwd]\n"},
			wantErr: `absolute path "/etc/passwd"`,
		},
		{
			name:    "absolute base",
			files:   map[string]string{"app/kustomization.yaml": "bases: [/etc]\n"},
			wantErr: `absolute path "/etc"`,
		},
		{
			name:    "symlinked resource to /etc/passwd",
			files:   map[string]string{"app/kustomization.yaml": "resources: [passwd.yaml]\n", "app/passwd.yaml": "link:/etc/passwd"},
			wantErr: `symlink "app/passwd.yaml" points to "/etc/passwd"`,
		},
		{
			name:    "symlinked base directory outside root",
			files:   map[string]string{"app/kustomization.yaml": "resources: [ext]\n", "app/ext": "link:../../outside"},
			wantErr: `symlink "app/ext" leads out of root`,
		},
		{
			name:    "symlink chain leaving root",
			files:   map[string]string{"app/kustomization.yaml": "resources: [a.yaml]\n", "app/a.yaml": "link:b.yaml", "app/b.yaml": "link:../../outside/cm.yaml"},
			wantErr: `symlink "app/b.yaml" leads out of root`,
		},
		{
			name:    "patch file outside root",
			files:   map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: ../../outside/patch.yaml\n", "app/cm.yaml": configMap("app")},
			wantErr: "outside/patch.yaml",
		},
		{
			name:    "patch file is a symlink out of root",
			files:   map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: p.yaml\n", "app/cm.yaml": configMap("app"), "app/p.yaml": "link:../../outside/patch.yaml"},
			wantErr: `symlink "app/p.yaml"`,
		},
		{
			name:    "absolute openapi schema",
			files:   map[string]string{"app/kustomization.yaml": "openapi:\n  path: /etc/passwd\n"},
			wantErr: `absolute path "/etc/passwd"`,
		},
		{
			name:    "kustomization file is a symlink out of root",
			files:   map[string]string{"app/kustomization.yaml": "link:../../outside/kustomization.yaml"},
			wantErr: "unable to find one of",
		},
		{
			name:    "build path outside root",
			files:   map[string]string{"app/kustomization.yaml": "resources: []\n"},
			path:    "../outside",
			wantErr: `build path "../outside"`,
		},
		{
			name:    "build path is a symlink out of root",
			files:   map[string]string{"app": "link:../outside"},
			wantErr: `symlink "app" leads out of root`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent, root := newRoot(t)
			writeTree(t, parent, outsideTree)
			writeTree(t, root, tt.files)
			reads := recordReads(t)
			path := tt.path
			if path == "" {
				path = "app"
			}
			objs, err := buildWithin(t, 30*time.Second, root, path, Options{})
			g.Expect(objs).To(BeEmpty())
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("stolen"))
			for _, r := range *reads {
				g.Expect(within(root, r)).To(BeTrue(), "read %q outside root", r)
			}
		})
	}
}

func TestBuildAllowsSymlinksInsideRoot(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "relative symlink to a base directory",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [base-link]\n",
				"app/base-link":          "link:../base",
			},
			want: []string{"ConfigMap/base"},
		},
		{
			name: "relative symlink to a manifest elsewhere in root",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [cm.yaml]\n",
				"app/cm.yaml":            "link:../base/cm.yaml",
			},
			want: []string{"ConfigMap/base"},
		},
		{
			name: "the build path itself is a symlink",
			files: map[string]string{
				"app": "link:base",
			},
			want: []string{"ConfigMap/base"},
		},
		{
			name: "symlinked parent directory",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [sub/cm.yaml]\n",
				"app/sub":                "link:../base",
			},
			want: []string{"ConfigMap/base"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, map[string]string{
				"base/kustomization.yaml": "resources: [cm.yaml]\n",
				"base/cm.yaml":            configMap("base"),
			})
			writeTree(t, root, tt.files)
			objs, err := Build(root, "app", Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names(objs)).To(Equal(tt.want))
		})
	}
}

func TestBuildAbsoluteSymlinkInsideRoot(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	real, err := filepath.EvalSymlinks(root)
	g.Expect(err).NotTo(HaveOccurred())
	writeTree(t, root, map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            configMap("base"),
		"app/kustomization.yaml":  "resources: [b]\n",
		"app/b":                   "link:" + filepath.Join(real, "base"),
	})
	objs, err := Build(root, "app", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(Equal([]string{"ConfigMap/base"}))
}

func TestBuildCyclesFailFast(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{name: "kustomization includes its own directory", files: map[string]string{"app/kustomization.yaml": "resources: [.]\n"}},
		{name: "kustomization includes its parent", files: map[string]string{"app/kustomization.yaml": "resources: [..]\n"}},
		{name: "component is itself", files: map[string]string{"app/kustomization.yaml": "components: [.]\n"}},
		{
			name: "two kustomizations include each other",
			files: map[string]string{
				"app/kustomization.yaml":   "resources: [../other]\n",
				"other/kustomization.yaml": "resources: [../app]\n",
			},
		},
		{
			name:  "symlink to its own directory",
			files: map[string]string{"app/kustomization.yaml": "resources: [loop]\n", "app/loop": "link:."},
		},
		{
			name: "symlink loop",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [a]\n",
				"app/a":                  "link:b",
				"app/b":                  "link:a",
			},
		},
		{
			name: "cycle through a symlinked directory",
			files: map[string]string{
				"app/kustomization.yaml":   "resources: [next]\n",
				"app/next":                 "link:../other",
				"other/kustomization.yaml": "resources: [back]\n",
				"other/back":               "link:../app",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, tt.files)
			_, err := buildWithin(t, 20*time.Second, root, "app", Options{})
			g.Expect(err).To(HaveOccurred())
		})
	}
}

func TestBuildRefusesRemoteReferences(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		opts  Options
		ref   string
	}{
		{name: "github shorthand", ref: "github.com/org/repo//deploy?ref=v1.0.0"},
		{name: "https git", ref: "https://github.com/org/repo//deploy?ref=main"},
		{name: "https file", ref: "https://example.com/manifests/app.yaml"},
		{name: "http with odd case", ref: "HTTP://example.com/app.yaml"},
		{name: "scp-like", ref: "git@github.com:org/repo.git"},
		{name: "ssh", ref: "ssh://git@example.com/org/repo.git"},
		{name: "file scheme", ref: "file:///srv/repos/app"},
		{name: "go-getter prefix", ref: "git::https://example.com/org/repo.git"},
		{name: "azure devops", ref: "https://dev.azure.com/org/project/_git/repo/path"},
	}
	for _, tt := range tests {
		for _, noRemote := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				g := NewWithT(t)
				_, root := newRoot(t)
				writeTree(t, root, map[string]string{"app/kustomization.yaml": "resources:\n- " + tt.ref + "\n"})
				_, err := buildWithin(t, 20*time.Second, root, "app", Options{NoRemoteBases: noRemote})
				g.Expect(errors.Is(err, ErrRemoteReference)).To(BeTrue(), "got %v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.ref))
				g.Expect(err.Error()).To(ContainSubstring(`kustomization file "app/kustomization.yaml"`))
				if noRemote {
					g.Expect(err.Error()).To(ContainSubstring("no-remote-bases"))
				}
			})
		}
	}
}

func TestBuildRefusesRemoteReferencesAnywhere(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		opts  Options
	}{
		{
			name: "in a nested base",
			files: map[string]string{
				"app/kustomization.yaml":  "resources: [../base]\n",
				"base/kustomization.yaml": "resources:\n- github.com/org/repo//base?ref=v1\n",
			},
		},
		{
			name:  "component",
			files: map[string]string{"app/kustomization.yaml": "components: [https://github.com/org/repo//c]\n"},
		},
		{
			name:  "patch path",
			files: map[string]string{"app/kustomization.yaml": "patches:\n- path: https://example.com/p.yaml\n"},
		},
		{
			name:  "legacy strategic merge patch path",
			files: map[string]string{"app/kustomization.yaml": "patchesStrategicMerge:\n- https://example.com/p.yaml\n"},
		},
		{
			name:  "generator file",
			files: map[string]string{"app/kustomization.yaml": "configMapGenerator:\n- name: x\n  files: [key=https://example.com/f]\n"},
		},
		{
			name:  "replacement file",
			files: map[string]string{"app/kustomization.yaml": "replacements:\n- path: https://example.com/r.yaml\n"},
		},
		{
			name:  "crds",
			files: map[string]string{"app/kustomization.yaml": "crds: [https://example.com/crd.json]\n"},
		},
		{
			name: "inline transformer config",
			files: map[string]string{"app/kustomization.yaml": `transformers:
- |
  apiVersion: builtin
  kind: PatchTransformer
  metadata:
    name: p
  path: https://example.com/p.yaml
`},
		},
		{
			name: "transformer config file",
			files: map[string]string{
				"app/kustomization.yaml": "transformers: [t.yaml]\n",
				"app/t.yaml":             "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: https://example.com/p.yaml\n",
			},
		},
		{
			name: "generator directory of configs",
			files: map[string]string{
				"app/kustomization.yaml":  "generators: [../gens]\n",
				"gens/kustomization.yaml": "resources: [cm.yaml]\n",
				"gens/cm.yaml":            "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: x\nfiles: [https://example.com/f]\n",
			},
		},
		{
			name:  "component from the options",
			files: map[string]string{"app/kustomization.yaml": "resources: []\n"},
			opts:  Options{Components: []string{"github.com/org/repo//components/x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, tt.files)
			_, err := buildWithin(t, 20*time.Second, root, "app", tt.opts)
			g.Expect(errors.Is(err, ErrRemoteReference)).To(BeTrue(), "got %v", err)
		})
	}
}

func TestIsRemote(t *testing.T) {
	tests := []struct {
		ref  string
		want bool
	}{
		{"../base", false},
		{"deploy.yaml", false},
		{"github.com-mirror/base", false},
		{"./github.com/org/repo", false},
		{"GitHub.com/org/repo", true},
		{"github.com:org/repo", true},
		{"user@host:repo", true},
		{"https:foo", true},
		{" https://x", true},
		{"s3://bucket/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			NewWithT(t).Expect(isRemote(tt.ref)).To(Equal(tt.want))
		})
	}
}

func TestBuildRecoversPanics(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, map[string]string{"kustomization.yaml": "resources: []\n"})
	saved := kustomizeRun
	t.Cleanup(func() { kustomizeRun = saved })
	kustomizeRun = func(filesys.FileSystem, string) (resmap.ResMap, error) { panic("boom") }
	_, err := Build(root, ".", Options{})
	g.Expect(err).To(MatchError(ContainSubstring("kustomize panicked: boom")))
	// The mutex was released: the next build runs.
	kustomizeRun = saved
	_, err = buildWithin(t, 10*time.Second, root, ".", Options{})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestBuildConcurrently(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, baseAndOverlays)
	want, err := BuildYAML(root, "overlays/prod", Options{NamePrefix: "x-"})
	g.Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			got, err := BuildYAML(root, "overlays/prod", Options{NamePrefix: "x-"})
			if err == nil && len(got) != len(want) {
				err = errors.New("different output")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

func TestBuildLeavesTheArtifactUnchanged(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, baseAndOverlays)
	before, err := os.ReadFile(filepath.Join(root, "overlays/prod/kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Build(root, "overlays/prod", Options{Components: []string{"../../components/monitoring"}, NamePrefix: "x-"})
	g.Expect(err).NotTo(HaveOccurred())
	after, err := os.ReadFile(filepath.Join(root, "overlays/prod/kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal(before))
	entries, err := os.ReadDir(filepath.Dir(root))
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		g.Expect(strings.Contains(e.Name(), "overlay")).To(BeFalse(), "nothing is written beside root")
	}
}

// TestBuildRefusesExponentialBases (row 43): a "diamond" of bases, each
// level including the level below twice under two name prefixes, would
// make kustomize build 2^n copies of the bottom level from 2n small files:
// it is refused before kustomize runs, while a base shared by a few
// overlays builds.
func TestBuildRefusesExponentialBases(t *testing.T) {
	diamond := func(levels int) map[string]string {
		files := map[string]string{"l0/kustomization.yaml": "resources: [cm.yaml]\n",
			"l0/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"}
		for i := 1; i <= levels; i++ {
			for _, side := range []string{"a", "b"} {
				files[fmt.Sprintf("l%d%s/kustomization.yaml", i, side)] = fmt.Sprintf("namePrefix: %s-\nresources: [../l%d]\n", side, i-1)
			}
			files[fmt.Sprintf("l%d/kustomization.yaml", i)] = fmt.Sprintf("resources: [../l%da, ../l%db]\n", i, i)
		}
		return files
	}
	tests := []struct {
		name    string
		levels  int
		wantErr bool
	}{
		{name: "a few levels build", levels: 3},
		{name: "twenty levels are refused", levels: 20, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, diamond(tt.levels))
			docs, err := buildWithin(t, 20*time.Second, root, fmt.Sprintf("l%d", tt.levels), Options{})
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("would build more than")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(docs).To(HaveLen(1 << tt.levels))
		})
	}
}
