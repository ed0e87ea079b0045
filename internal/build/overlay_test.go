package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// plainApp is a directory without a kustomization file, whose kustomization
// Generate writes: objects that the options' transformers reach (a
// RoleBinding's subject follows the namespace, the Deployment's reference
// follows the ConfigMap's name) and a sub-directory with a kustomization of
// its own.
var plainApp = map[string]string{
	"app/deploy.yaml": strings.Replace(deployment, "        image: nginx:1.25\n",
		"        image: nginx:1.25\n        envFrom:\n        - configMapRef: {name: settings}\n", 1),
	"app/cm.yaml": configMap("settings"),
	"app/rbac.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: runner
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: runner
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: ServiceAccount, name: runner, namespace: default}
`,
	"app/extra/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: extra-\n",
	"app/extra/cm.yaml":            configMap("more"),
	// The components of baseAndOverlays: one patches, one adds an object.
	"components/scale/kustomization.yaml":      baseAndOverlays["components/scale/kustomization.yaml"],
	"components/monitoring/kustomization.yaml": baseAndOverlays["components/monitoring/kustomization.yaml"],
	"components/monitoring/sm.yaml":            baseAndOverlays["components/monitoring/sm.yaml"],
}

func TestBuild_FoldsOptionsIntoAGeneratedKustomization(t *testing.T) {
	all := Options{
		NamePrefix:      "a-",
		NameSuffix:      "-z",
		TargetNamespace: "team",
		Images:          []Image{{Name: "nginx", NewTag: "1.27"}},
		Patches: []Patch{
			{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  extra: yes-please\n"},
			{Patch: `[{"op": "replace", "path": "/spec/replicas", "value": 5}]`, Target: &Selector{Kind: "Deployment"}},
		},
		Components:     []string{"../components/scale", "../components/monitoring"},
		CommonMetadata: &CommonMetadata{Labels: map[string]string{"team": "blue"}, Annotations: map[string]string{"owner": "ops"}},
	}
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"none", Options{}, []string{"ServiceAccount/runner", "RoleBinding/runner", "ConfigMap/extra-more", "ConfigMap/settings", "Deployment/web"}},
		{"target namespace", Options{TargetNamespace: "team"}, nil},
		{"name prefix and suffix", Options{NamePrefix: "a-", NameSuffix: "-z"}, nil},
		{"components", Options{Components: []string{"../components/scale", "../components/monitoring"}}, nil},
		{"every option", all, []string{
			"ServiceAccount/team/a-runner-z", "RoleBinding/team/a-runner-z",
			"ConfigMap/team/a-extra-more-z", "ConfigMap/team/a-monitoring-z", "ConfigMap/team/a-settings-z", "Deployment/team/a-web-z",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// Generated: the kustomization is served from memory, and the
			// options are written into it.
			_, root := newRoot(t)
			writeTree(t, root, plainApp)
			files, err := Generate(root, "app")
			g.Expect(err).NotTo(HaveOccurred())
			opts := tt.opts
			opts.Files = files
			p, err := prepare(root, "app", opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.ov).To(Equal(p.dir), "the options folded into the generated kustomization")
			folded, err := BuildYAML(root, "app", opts)
			g.Expect(err).NotTo(HaveOccurred())

			// The same kustomization written to the disk: the options
			// come in an overlay on top of it, as for any user's file.
			_, onDisk := newRoot(t)
			writeTree(t, onDisk, plainApp)
			for name, data := range files {
				rel, err := filepath.Rel(root, name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(os.WriteFile(filepath.Join(onDisk, rel), data, 0o600)).To(Succeed())
			}
			p, err = prepare(onDisk, "app", tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.ov).NotTo(Equal(p.dir), "an overlay on the user's kustomization")
			overlaid, err := BuildYAML(onDisk, "app", tt.opts)
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(yamlStrings(folded)).To(Equal(yamlStrings(overlaid)))
			if tt.want != nil {
				objs, err := Build(root, "app", opts)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(names(objs)).To(Equal(tt.want))
				g.Expect(folded[len(folded)-1]).To(ContainSubstring("name: "+tt.opts.NamePrefix+"settings"+tt.opts.NameSuffix),
					"the Deployment's reference follows its ConfigMap's name")
			}
		})
	}
}

func TestBuild_FoldsOnlyAKustomizationThatTransformsNothing(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, plainApp)
	// Served from memory, but with a prefix of its own: the options'
	// prefix stacks on it, as an overlay's does.
	served := map[string][]byte{filepath.Join(root, "app", "kustomization.yaml"): []byte("resources: [cm.yaml]\nnamePrefix: own-\n")}
	opts := Options{NamePrefix: "a-", Files: served}
	p, err := prepare(root, "app", opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.ov).NotTo(Equal(p.dir))
	objs, err := Build(root, "app", opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(Equal([]string{"ConfigMap/a-own-settings"}))

	// Nor a Component served in its place, which kustomize refuses to
	// build: written as a kustomization, it would build.
	served[filepath.Join(root, "app", "kustomization.yaml")] = []byte("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n")
	p, err = prepare(root, "app", Options{Files: served})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.ov).NotTo(Equal(p.dir))
	_, err = Build(root, "app", Options{Files: served})
	g.Expect(err).To(HaveOccurred())

	// Build metadata keeps the overlay: its paths are written relative to it.
	files, err := Generate(root, "app")
	g.Expect(err).NotTo(HaveOccurred())
	p, err = prepare(root, "app", Options{Files: files, BuildMetadata: []string{OriginAnnotations}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.ov).NotTo(Equal(p.dir))
}

func yamlStrings(docs [][]byte) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = string(d)
	}
	return out
}

// BenchmarkBuild_GeneratedKustomization builds a directory without a
// kustomization file with a target namespace, as most Kustomizations of
// plain manifests do: the options folded into the generated kustomization,
// and in an overlay on top of the same kustomization written to the disk.
func BenchmarkBuild_GeneratedKustomization(b *testing.B) {
	opts := Options{TargetNamespace: "team"}
	b.Run("folded", func(b *testing.B) {
		root, files := generated(b)
		opts := opts
		opts.Files = files
		benchmarkBuild(b, root, opts)
	})
	b.Run("overlay", func(b *testing.B) {
		root, files := generated(b)
		for name, data := range files {
			if err := os.WriteFile(name, data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		benchmarkBuild(b, root, opts)
	})
}

// generated writes plainApp into a new root and generates app's
// kustomization.
func generated(b *testing.B) (string, map[string][]byte) {
	_, root := newRoot(b)
	writeTree(b, root, plainApp)
	files, err := Generate(root, "app")
	if err != nil {
		b.Fatal(err)
	}
	return root, files
}

func benchmarkBuild(b *testing.B, root string, opts Options) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildDocuments(root, "app", opts); err != nil {
			b.Fatal(err)
		}
	}
}
