package build

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// baseAndOverlays is a typical repository: a base and two overlays.
var baseAndOverlays = map[string]string{
	"base/kustomization.yaml": "resources:\n- deploy.yaml\n- cm.yaml\n",
	"base/deploy.yaml":        deployment,
	"base/cm.yaml":            configMap("settings"),
	"overlays/prod/kustomization.yaml": `resources:
- ../../base
namePrefix: prod-
patches:
- patch: |
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      replicas: 3
`,
	"overlays/dev/kustomization.yaml": "resources: [../../base]\nnamespace: dev\n",
	"components/monitoring/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
- sm.yaml
`,
	"components/monitoring/sm.yaml": configMap("monitoring"),
	"components/scale/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
- target: {kind: Deployment, name: web}
  patch: |
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
      annotations:
        component: scale
`,
}

func TestBuildBasesAndOverlays(t *testing.T) {
	tests := []struct {
		path  string
		want  []string
		check func(g Gomega, objs []*unstructured.Unstructured)
	}{
		{path: "base", want: []string{"ConfigMap/settings", "Deployment/web"}},
		{
			path: "overlays/prod",
			want: []string{"ConfigMap/prod-settings", "Deployment/prod-web"},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				r, _, _ := unstructured.NestedInt64(find(g, objs, "Deployment", "prod-web").Object, "spec", "replicas")
				g.Expect(r).To(Equal(int64(3)))
			},
		},
		{path: "overlays/dev", want: []string{"ConfigMap/dev/settings", "Deployment/dev/web"}},
		{path: "/overlays/dev", want: []string{"ConfigMap/dev/settings", "Deployment/dev/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, baseAndOverlays)
			objs, err := Build(root, tt.path, Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names(objs)).To(Equal(tt.want))
			if tt.check != nil {
				tt.check(g, objs)
			}
		})
	}
}

func TestBuildOverlayOptions(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		opts    Options
		want    []string
		wantErr string
		check   func(g Gomega, objs []*unstructured.Unstructured)
	}{
		{
			name: "name prefix and suffix stack on the user's",
			path: "overlays/prod",
			opts: Options{NamePrefix: "a-", NameSuffix: "-z"},
			want: []string{"ConfigMap/a-prod-settings-z", "Deployment/a-prod-web-z"},
		},
		{
			name: "target namespace overrides the user's",
			path: "overlays/dev",
			opts: Options{TargetNamespace: "team"},
			want: []string{"ConfigMap/team/settings", "Deployment/team/web"},
		},
		{
			name: "images",
			path: "base",
			opts: Options{Images: []Image{{Name: "nginx", NewName: "registry.local/nginx", NewTag: "1.27"}}},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(image(g, find(g, objs, "Deployment", "web"))).To(Equal("registry.local/nginx:1.27"))
			},
		},
		{
			name: "image digest",
			path: "base",
			opts: Options{Images: []Image{{Name: "nginx", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(image(g, find(g, objs, "Deployment", "web"))).To(HaveSuffix("nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
			},
		},
		{
			name: "strategic merge patch without target",
			path: "base",
			opts: Options{Patches: []Patch{{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  extra: yes-please\n"}}},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				v, _, _ := unstructured.NestedString(find(g, objs, "ConfigMap", "settings").Object, "data", "extra")
				g.Expect(v).To(Equal("yes-please"))
			},
		},
		{
			name: "JSON 6902 patch with a target selector",
			path: "base",
			opts: Options{Patches: []Patch{{
				Patch:  `[{"op": "replace", "path": "/spec/replicas", "value": 5}]`,
				Target: &Selector{Group: "apps", Version: "v1", Kind: "Deployment", LabelSelector: "app=web"},
			}}},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				r, _, _ := unstructured.NestedInt64(find(g, objs, "Deployment", "web").Object, "spec", "replicas")
				g.Expect(r).To(Equal(int64(5)))
			},
		},
		{
			name: "YAML JSON6902 patch applied to the objects matched by name regex",
			path: "base",
			opts: Options{Patches: []Patch{{
				Patch:  "- op: add\n  path: /metadata/annotations\n  value: {patched: \"true\"}\n",
				Target: &Selector{Name: "sett.*"},
			}}},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(find(g, objs, "ConfigMap", "settings").GetAnnotations()).To(HaveKeyWithValue("patched", "true"))
				g.Expect(find(g, objs, "Deployment", "web").GetAnnotations()).NotTo(HaveKey("patched"))
			},
		},
		{
			name: "components relative to the path",
			path: "overlays/dev",
			opts: Options{Components: []string{"../../components/monitoring"}},
			want: []string{"ConfigMap/dev/monitoring", "ConfigMap/dev/settings", "Deployment/dev/web"},
		},
		{
			name: "components run inside the user's kustomization",
			path: "overlays/prod",
			opts: Options{Components: []string{"../../components/scale", "../../components/monitoring"}},
			want: []string{"ConfigMap/prod-monitoring", "ConfigMap/prod-settings", "Deployment/prod-web"},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				d := find(g, objs, "Deployment", "prod-web")
				g.Expect(d.GetAnnotations()).To(HaveKeyWithValue("component", "scale"))
			},
		},
		{
			name:    "missing component",
			path:    "base",
			opts:    Options{Components: []string{"../components/nope"}},
			wantErr: `component "../components/nope": directory "components/nope" not found`,
		},
		{
			name: "missing component ignored",
			path: "base",
			opts: Options{Components: []string{"../components/nope", "../components/monitoring"}, IgnoreMissingComponents: true},
			want: []string{"ConfigMap/monitoring", "ConfigMap/settings", "Deployment/web"},
		},
		{
			name:    "component outside root is not ignored",
			path:    "base",
			opts:    Options{Components: []string{"../../../elsewhere"}, IgnoreMissingComponents: true},
			wantErr: "outside the root directory",
		},
		{
			name: "common metadata stays out of selectors and templates",
			path: "base",
			opts: Options{CommonMetadata: &CommonMetadata{
				Labels:      map[string]string{"team": "blue"},
				Annotations: map[string]string{"owner": "ops"},
			}},
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				d := find(g, objs, "Deployment", "web")
				g.Expect(d.GetLabels()).To(HaveKeyWithValue("team", "blue"))
				g.Expect(d.GetAnnotations()).To(HaveKeyWithValue("owner", "ops"))
				sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
				g.Expect(sel).To(Equal(map[string]string{"app": "web"}))
				tl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
				g.Expect(tl).To(Equal(map[string]string{"app": "web"}))
				ta, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
				g.Expect(ta).To(BeEmpty())
				cm := find(g, objs, "ConfigMap", "settings")
				g.Expect(cm.GetLabels()).To(HaveKeyWithValue("team", "blue"))
				g.Expect(cm.GetAnnotations()).To(HaveKeyWithValue("owner", "ops"))
			},
		},
		{
			name:    "invalid patch",
			path:    "base",
			opts:    Options{Patches: []Patch{{Patch: "- op: explode\n  path: /x\n", Target: &Selector{Kind: "ConfigMap"}}}},
			wantErr: "explode",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, baseAndOverlays)
			objs, err := Build(root, tt.path, tt.opts)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want != nil {
				g.Expect(names(objs)).To(Equal(tt.want))
			}
			if tt.check != nil {
				tt.check(g, objs)
			}
		})
	}
}

func image(g Gomega, d *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	g.Expect(cs).To(HaveLen(1))
	return cs[0].(map[string]any)["image"].(string)
}

func TestBuildGenerators(t *testing.T) {
	tests := []struct {
		name    string
		kust    string
		wantErr string
		check   func(g Gomega, objs []*unstructured.Unstructured)
	}{
		{
			name: "configMap and secret generators read files inside root",
			kust: `configMapGenerator:
- name: app
  files: [config.properties, renamed=env/app.env]
  envs: [env/app.env]
secretGenerator:
- name: creds
  literals: [user=admin]
  files: [token.txt]
generatorOptions:
  disableNameSuffixHash: true
`,
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				cm := find(g, objs, "ConfigMap", "app")
				data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
				g.Expect(data).To(HaveKeyWithValue("config.properties", "a=b\n"))
				g.Expect(data).To(HaveKeyWithValue("renamed", "MODE=prod\n"))
				g.Expect(data).To(HaveKeyWithValue("MODE", "prod"))
				s := find(g, objs, "Secret", "creds")
				sd, _, _ := unstructured.NestedStringMap(s.Object, "data")
				g.Expect(sd).To(HaveKey("token.txt"))
			},
		},
		{
			name: "generator file through an in-root symlink",
			kust: "configMapGenerator:\n- name: linked\n  files: [linked.properties]\n",
			check: func(g Gomega, objs []*unstructured.Unstructured) {
				g.Expect(names(objs)).To(HaveLen(1))
				g.Expect(objs[0].GetName()).To(HavePrefix("linked-"))
			},
		},
		{
			name:    "generator file outside root",
			kust:    "secretGenerator:\n- name: stolen\n  files: [../../secret.txt]\n",
			wantErr: "secret.txt",
		},
		{
			name:    "generator file is a symlink out of root",
			kust:    "secretGenerator:\n- name: stolen\n  files: [passwd]\n",
			wantErr: `symlink "app/passwd" points to "/etc/passwd"`,
		},
		{
			name:    "generator env file with an absolute path",
			kust:    "configMapGenerator:\n- name: x\n  envs: [/etc/hostname]\n",
			wantErr: `absolute path "/etc/hostname"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent, root := newRoot(t)
			writeTree(t, parent, map[string]string{"secret.txt": "TOP-SECRET"})
			writeTree(t, root, map[string]string{
				"app/kustomization.yaml":   tt.kust,
				"app/config.properties":    "a=b\n",
				"app/env/app.env":          "MODE=prod\n",
				"app/token.txt":            "s3cr3t",
				"shared/linked.properties": "x=y\n",
				"app/linked.properties":    "link:../shared/linked.properties",
				"app/passwd":               "link:/etc/passwd",
			})
			objs, err := Build(root, "app", Options{})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("TOP-SECRET"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, objs)
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		path    string
		wantErr []string
	}{
		{
			name:    "malformed YAML",
			files:   map[string]string{"app/kustomization.yaml": "resources: [a.yaml\n"},
			path:    "app",
			wantErr: []string{`kustomization file "app/kustomization.yaml"`},
		},
		{
			name:    "unknown field",
			files:   map[string]string{"app/kustomization.yaml": "resourcez: [a.yaml]\n"},
			path:    "app",
			wantErr: []string{`kustomization file "app/kustomization.yaml"`, `unknown field "resourcez"`},
		},
		{
			name:    "missing kustomization",
			files:   map[string]string{"app/a.yaml": configMap("a")},
			path:    "app",
			wantErr: []string{`kustomize build of "app"`, "unable to find one of"},
		},
		{
			name:    "missing resource",
			files:   map[string]string{"app/kustomization.yaml": "resources: [nope.yaml]\n"},
			path:    "app",
			wantErr: []string{"nope.yaml"},
		},
		{
			name:    "invalid resource",
			files:   map[string]string{"app/kustomization.yaml": "resources: [bad.yaml]\n", "app/bad.yaml": "kind: [\n"},
			path:    "app",
			wantErr: []string{"bad.yaml"},
		},
		{
			name:    "path does not exist",
			files:   map[string]string{"a.yaml": configMap("a")},
			path:    "nope",
			wantErr: []string{`build path "nope" is not a directory`},
		},
		{
			name: "exec plugins are disabled",
			files: map[string]string{
				"app/kustomization.yaml": "generators: [gen.yaml]\n",
				"app/gen.yaml":           "apiVersion: example.com/v1\nkind: Exec\nmetadata:\n  name: x\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n",
			},
			path:    "app",
			wantErr: []string{"external plugins disabled"},
		},
		{
			name: "helm is disabled",
			files: map[string]string{
				"app/kustomization.yaml": "helmCharts:\n- name: x\n  repo: oci://example.com/charts\n",
			},
			path:    "app",
			wantErr: []string{"HelmChartInflationGenerator"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, root := newRoot(t)
			writeTree(t, root, tt.files)
			_, err := Build(root, tt.path, Options{})
			g.Expect(err).To(HaveOccurred())
			for _, want := range tt.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, baseAndOverlays)
	first, err := BuildYAML(root, "overlays/prod", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	for range 3 {
		again, err := BuildYAML(root, "overlays/prod", Options{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(first))
	}
}

func TestBuildYAMLKeepsQuoting(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q\ndata:\n  quoted: \"${flag}\"\n  plain: ${flag}\n",
	})
	docs, err := BuildYAML(root, ".", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(HaveLen(1))
	g.Expect(string(docs[0])).To(ContainSubstring(`quoted: "${flag}"`))
	g.Expect(string(docs[0])).To(ContainSubstring(`plain: ${flag}`))
}

// TestBuildServesInMemoryFiles builds with files that exist only in memory
// (a generated kustomization) or replace files of the root (a decrypted
// generator file, reached through a link): the root is only read.
func TestBuildServesInMemoryFiles(t *testing.T) {
	g := NewWithT(t)
	_, root := newRoot(t)
	writeTree(t, root, map[string]string{
		"app/cm.yaml":                configMap("cm"),
		"app/gen/kustomization.yaml": "secretGenerator:\n- name: s\n  envs: [linked.env]\n",
		"app/gen/linked.env":         "link:../../shared/real.env",
		"shared/real.env":            "KEY=ciphertext\n",
	})
	real, err := filepath.EvalSymlinks(root)
	g.Expect(err).NotTo(HaveOccurred())
	files := map[string][]byte{
		filepath.Join(real, "app/kustomization.yaml"): []byte("resources: [cm.yaml, gen]\n"),
		filepath.Join(real, "shared/real.env"):        []byte("KEY=plaintext\n"),
	}
	objs, err := Build(root, "app", Options{Files: files})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(objs)).To(ConsistOf("ConfigMap/cm", HavePrefix("Secret/s-")))
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			g.Expect(o.Object["data"]).To(HaveKeyWithValue("KEY", base64.StdEncoding.EncodeToString([]byte("plaintext"))))
		}
	}
	_, err = os.Stat(filepath.Join(root, "app/kustomization.yaml"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "nothing is written into the root")

	_, err = Build(root, "app", Options{Files: map[string][]byte{filepath.Join(filepath.Dir(real), "x.yaml"): nil}})
	g.Expect(err).To(MatchError(ErrOutsideRoot))
}
