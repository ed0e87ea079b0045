package build

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestBuildMetadata(t *testing.T) {
	tree := map[string]string{
		"apps/base/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/base/cm.yaml":            configMap("a"),
		"apps/prod/kustomization.yml":  "resources: [../base, cm2.yaml]\nnamePrefix: p-\nconfigMapGenerator:\n- name: gen\n  literals: [k=v]\n  options: {disableNameSuffixHash: true}\n",
		"apps/prod/cm2.yaml":           configMap("b"),
	}
	const origin, transformations = "config.kubernetes.io/origin", "alpha.config.kubernetes.io/transformations"
	cases := []struct {
		name     string
		metadata []string
		want     map[string]map[string]string // object name -> annotation -> value
		wantErr  string
	}{{
		name: "none",
		want: map[string]map[string]string{"x-p-a": nil, "x-p-b": nil},
	}, {
		name:     "origin paths are relative to the built path",
		metadata: []string{OriginAnnotations},
		want: map[string]map[string]string{
			"x-p-a": {origin: "path: ../base/cm.yaml\n"},
			"x-p-b": {origin: "path: cm2.yaml\n"},
		},
	}, {
		name:     "generated objects name the kustomization file and the generator",
		metadata: []string{OriginAnnotations},
		want: map[string]map[string]string{
			"x-p-gen": {origin: "configuredBy:\n  apiVersion: builtin\n  kind: ConfigMapGenerator\nconfiguredIn: kustomization.yml\n"},
		},
	}, {
		name:     "transformations of the file and of the spec",
		metadata: []string{TransformerAnnotations},
		want: map[string]map[string]string{
			"x-p-b": {transformations: "- configuredBy:\n    apiVersion: builtin\n    kind: PrefixTransformer\n  configuredIn: kustomization.yml\n" +
				"- configuredBy:\n    apiVersion: builtin\n    kind: PrefixTransformer\n  configuredIn: kustomization.yaml\n"},
		},
	}, {
		name:     "an unknown option is an error",
		metadata: []string{"managedByLabel"},
		wantErr:  `buildMetadata "managedByLabel"`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, tree)
			objs, err := Build(root, "apps/prod", Options{NamePrefix: "x-", BuildMetadata: tc.metadata})
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			byName := map[string]map[string]string{}
			for _, o := range objs {
				byName[o.GetName()] = o.GetAnnotations()
				for _, v := range o.GetAnnotations() {
					g.Expect(v).NotTo(ContainSubstring(root), "the extracted artifact's location leaks")
					g.Expect(v).NotTo(ContainSubstring("windlass-overlay"))
				}
			}
			for name, want := range tc.want {
				g.Expect(byName).To(HaveKey(name))
				if want == nil {
					g.Expect(byName[name]).To(BeEmpty())
				}
				for k, v := range want {
					g.Expect(byName[name]).To(HaveKeyWithValue(k, v))
				}
			}
		})
	}
}

func TestRelocatePath(t *testing.T) {
	ov, dir := "/t/.artifact.windlass-overlay", "/t/artifact/apps/prod"
	for in, want := range map[string]string{
		"kustomization.yaml":                      "kustomization.yaml",
		"../artifact/apps/prod/kustomization.yml": "kustomization.yml",
		"../artifact/apps/base/cm.yaml":           "../base/cm.yaml",
		"../artifact/apps/prod/sub/x.yaml":        "sub/x.yaml",
	} {
		if got := relocatePath(in, ov, dir); got != want || strings.Contains(got, "overlay") {
			t.Errorf("relocatePath(%q) = %q, want %q", in, got, want)
		}
	}
}
