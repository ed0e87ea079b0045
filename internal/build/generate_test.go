package build

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"
)

func TestGenerate(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		path    string
		want    []string // nil: no file is generated
		wantErr string
	}{
		{
			name: "plain manifests, recursive, sorted, any extension case",
			files: map[string]string{
				"b.yaml":          configMap("b"),
				"a.YML":           configMap("a"),
				"c.Json":          `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
				"sub/deep/d.yaml": configMap("d"),
				"readme.md":       "# not yaml",
				"values.yaml":     "replicaCount: 1\n",
				"list.json":       `[1, 2]`,
				"multi.yaml":      "foo: bar\n---\n" + configMap("m"),
				"kconfig.yaml":    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
			},
			path: ".",
			want: []string{"a.YML", "b.yaml", "c.Json", "multi.yaml", "sub/deep/d.yaml"},
		},
		{
			name: "directory with its own kustomization is listed whole",
			files: map[string]string{
				"app/x.yaml":                configMap("x"),
				"base/kustomization.yaml":   "resources: [cm.yaml]\n",
				"base/cm.yaml":              configMap("cm"),
				"base/nested/ignored.yaml":  configMap("ignored"),
				"other/Kustomization":       "resources: []\n",
				"other/should-not-see.yaml": configMap("no"),
			},
			path: ".",
			want: []string{"app/x.yaml", "base", "other"},
		},
		{
			name:  "sub path",
			files: map[string]string{"apps/prod/a.yaml": configMap("a"), "apps/dev/b.yaml": configMap("b")},
			path:  "apps/prod",
			want:  []string{"a.yaml"},
		},
		{
			name:  "existing kustomization is left alone",
			files: map[string]string{"kustomization.yml": "resources: []\n", "a.yaml": configMap("a")},
			path:  ".",
		},
		{
			name:  "in-root file symlink listed, dir symlink not followed",
			files: map[string]string{"real/a.yaml": configMap("a"), "app/link.yaml": "link:../real/a.yaml", "app/dirlink": "link:../real"},
			path:  "app",
			want:  []string{"link.yaml"},
		},
		{
			name:    "symlink out of root",
			files:   map[string]string{"app/passwd.yaml": "link:/etc/passwd"},
			path:    "app",
			wantErr: `symlink "app/passwd.yaml" points to "/etc/passwd"`,
		},
		{
			name:    "invalid YAML",
			files:   map[string]string{"bad.yaml": "a: [\n"},
			path:    ".",
			wantErr: `"bad.yaml": not valid YAML`,
		},
		{
			name:    "path outside root",
			files:   map[string]string{"a.yaml": configMap("a")},
			path:    "../..",
			wantErr: "outside the root directory",
		},
		{
			name:    "path is a file",
			files:   map[string]string{"a.yaml": configMap("a")},
			path:    "a.yaml",
			wantErr: "is not a directory",
		},
		{
			name:  "empty directory",
			files: map[string]string{"empty/.keep": ""},
			path:  "empty",
			want:  []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, tt.files)
			files, err := Generate(root, tt.path)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			_, statErr := os.Lstat(filepath.Join(root, tt.path, "kustomization.yaml"))
			if tt.want == nil {
				g.Expect(files).To(BeEmpty(), "no kustomization is generated")
				return
			}
			g.Expect(os.IsNotExist(statErr)).To(BeTrue(), "nothing is written into the source")
			real, err := filepath.EvalSymlinks(filepath.Join(root, tt.path))
			g.Expect(err).NotTo(HaveOccurred())
			data, ok := files[filepath.Join(real, "kustomization.yaml")]
			g.Expect(ok).To(BeTrue(), "generated at the directory's real path: %v", files)
			var k types.Kustomization
			g.Expect(sigsyaml.Unmarshal(data, &k)).To(Succeed())
			g.Expect(k.Kind).To(Equal("Kustomization"))
			g.Expect(k.Resources).To(HaveLen(len(tt.want)))
			if len(tt.want) > 0 {
				g.Expect(k.Resources).To(Equal(tt.want))
			}
		})
	}
}

func TestGenerateThenBuild(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, map[string]string{
		"deploy.yaml":             deployment,
		"config/cm.yaml":          configMap("settings"),
		"base/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: base-\n",
		"base/cm.yaml":            configMap("cm"),
	})
	files, err := Generate(root, ".")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(1))
	objs, err := Build(root, ".", Options{Files: files})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(Equal([]string{"ConfigMap/base-cm", "ConfigMap/settings", "Deployment/web"}))
}

func TestGenerateDoesNotWriteThroughLinks(t *testing.T) {
	g := NewWithT(t)
	parent, root := newRoot(t)
	outside := filepath.Join(parent, "outside.yaml")
	writeTree(t, root, map[string]string{"a.yaml": configMap("a"), "kustomization.yaml": "link:" + outside})
	// The dangling link counts as a kustomization: nothing is generated,
	// and nothing written.
	files, err := Generate(root, ".")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(BeEmpty())
	_, err = os.Stat(outside)
	g.Expect(os.IsNotExist(err)).To(BeTrue())
	// And a build reports the link instead of reading outside root.
	_, err = Build(root, ".", Options{})
	g.Expect(err).To(HaveOccurred())
}
