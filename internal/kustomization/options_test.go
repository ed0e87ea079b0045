package kustomization

import (
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestBuildOptions(t *testing.T) {
	sel := &kustomizev1.Selector{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web", Namespace: "prod",
		LabelSelector: "tier=front", AnnotationSelector: "a=b"}
	tests := []struct {
		name string
		spec kustomizev1.KustomizationSpec
		want build.Options
	}{
		{name: "empty spec", want: build.Options{}},
		{name: "names and namespace",
			spec: kustomizev1.KustomizationSpec{NamePrefix: "prod-", NameSuffix: "-v1", TargetNamespace: "prod"},
			want: build.Options{NamePrefix: "prod-", NameSuffix: "-v1", TargetNamespace: "prod"}},
		{name: "components",
			spec: kustomizev1.KustomizationSpec{Components: []string{"../c1", "../c2"}, IgnoreMissingComponents: true},
			want: build.Options{Components: []string{"../c1", "../c2"}, IgnoreMissingComponents: true}},
		{name: "patches with and without a target",
			spec: kustomizev1.KustomizationSpec{Patches: []kustomizev1.Patch{{Patch: "p1"}, {Patch: "p2", Target: sel}}},
			want: build.Options{Patches: []build.Patch{{Patch: "p1"}, {Patch: "p2", Target: &build.Selector{Group: "apps", Version: "v1",
				Kind: "Deployment", Name: "web", Namespace: "prod", LabelSelector: "tier=front", AnnotationSelector: "a=b"}}}}},
		{name: "images",
			spec: kustomizev1.KustomizationSpec{Images: []kustomizev1.Image{{Name: "nginx", NewTag: "1.27"},
				{Name: "app", NewName: "registry/app", Digest: "sha256:abc"}}},
			want: build.Options{Images: []build.Image{{Name: "nginx", NewTag: "1.27"}, {Name: "app", NewName: "registry/app", Digest: "sha256:abc"}}}},
		{name: "common and build metadata",
			spec: kustomizev1.KustomizationSpec{CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "a"},
				Annotations: map[string]string{"note": "b"}}, BuildMetadata: []string{"originAnnotations"}},
			want: build.Options{CommonMetadata: &build.CommonMetadata{Labels: map[string]string{"team": "a"},
				Annotations: map[string]string{"note": "b"}}, BuildMetadata: []string{"originAnnotations"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(BuildOptions(&tt.spec)).To(Equal(tt.want))
		})
	}
}

// TestBuildOptionsMapsEveryOverlay fills every overlay field of a spec and
// checks that every option of the build, but those of the caller, is set:
// an option added to build.Options must be mapped here.
func TestBuildOptionsMapsEveryOverlay(t *testing.T) {
	g := NewWithT(t)
	spec := kustomizev1.KustomizationSpec{
		NamePrefix: "p-", NameSuffix: "-s", TargetNamespace: "ns",
		Components: []string{"c"}, IgnoreMissingComponents: true,
		Patches:        []kustomizev1.Patch{{Patch: "p"}},
		Images:         []kustomizev1.Image{{Name: "i", NewTag: "t"}},
		CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{"a": "b"}},
		BuildMetadata:  []string{"originAnnotations"},
	}
	opts := reflect.ValueOf(BuildOptions(&spec))
	for i := range opts.NumField() {
		name := opts.Type().Field(i).Name
		if name == "Files" || name == "NoRemoteBases" {
			continue // the caller's: the artifact's files, the controller's flag
		}
		g.Expect(opts.Field(i).IsZero()).To(BeFalse(), "build.Options.%s is not mapped from the spec", name)
	}
}

// TestBuildOptionsBuild builds a folder with the options of a spec: the
// mapping is what the build applies.
func TestBuildOptionsBuild(t *testing.T) {
	g := NewWithT(t)
	root := testutil.WriteTree(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: v\n",
	})
	spec := kustomizev1.KustomizationSpec{
		NamePrefix: "prod-", TargetNamespace: "prod",
		Patches: []kustomizev1.Patch{{Patch: `[{"op": "replace", "path": "/data/k", "value": "patched"}]`,
			Target: &kustomizev1.Selector{Kind: "ConfigMap"}}},
		CommonMetadata: &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "a"}},
	}
	objs, err := build.Build(root, "app", BuildOptions(&spec))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	g.Expect(objs[0].GetName()).To(Equal("prod-cm"))
	g.Expect(objs[0].GetNamespace()).To(Equal("prod"))
	g.Expect(objs[0].GetLabels()).To(Equal(map[string]string{"team": "a"}))
	v, _, _ := unstructured.NestedString(objs[0].Object, "data", "k")
	g.Expect(v).To(Equal("patched"))
}

func TestIgnoreRules(t *testing.T) {
	deploy := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "prod", "labels": map[string]any{"tier": "front"},
				"annotations": map[string]any{"a/b": "x"}},
			"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "image": "app:1"}}}}},
		}}
	}
	replicas := []string{"/spec/replicas"}
	tests := []struct {
		name    string
		rules   []kustomizev1.IgnoreRule
		removed bool
		errText string
	}{
		{name: "no rules"},
		{name: "any object", rules: []kustomizev1.IgnoreRule{{Paths: replicas}}, removed: true},
		{name: "by kind and group", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{Group: "apps", Kind: "Deployment"}}}, removed: true},
		{name: "by version and namespace", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{Version: "v1", Namespace: "prod"}}}, removed: true},
		{name: "other kind", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{Kind: "StatefulSet"}}}},
		{name: "other namespace", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{Namespace: "dev"}}}},
		{name: "name regexp", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{Name: "we.*"}}}, removed: true},
		{name: "name is anchored", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{Name: "we"}}}},
		{name: "labels", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{LabelSelector: "tier=front"}}}, removed: true},
		{name: "annotations", rules: []kustomizev1.IgnoreRule{{Paths: replicas, Target: &kustomizev1.Selector{AnnotationSelector: "a/b=y"}}}},
		{name: "missing path", rules: []kustomizev1.IgnoreRule{{Paths: []string{"/spec/nothing/here"}}}},
		{name: "invalid path", rules: []kustomizev1.IgnoreRule{{Paths: []string{"/x"}}, {Paths: []string{"spec/replicas"}}},
			errText: "spec.ignore[1]: invalid JSON pointer 'spec/replicas'"},
		{name: "invalid name", rules: []kustomizev1.IgnoreRule{{Paths: []string{"/x"}, Target: &kustomizev1.Selector{Name: "("}}},
			errText: "spec.ignore[0].target: "},
		{name: "invalid label selector", rules: []kustomizev1.IgnoreRule{{Paths: []string{"/x"}, Target: &kustomizev1.Selector{LabelSelector: "a in (b"}}},
			errText: "spec.ignore[0].target: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rules, err := IgnoreRules(tt.rules)
			if tt.errText != "" {
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).To(HavePrefix(tt.errText))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			obj := deploy()
			rules.Apply([]*unstructured.Unstructured{obj})
			_, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
			g.Expect(found).To(Equal(!tt.removed))
		})
	}

	t.Run("several paths, escaped", func(t *testing.T) {
		g := NewWithT(t)
		rules, err := IgnoreRules([]kustomizev1.IgnoreRule{{Paths: []string{"/spec/template/spec/containers/0/image", "/metadata/annotations/a~1b"}}})
		g.Expect(err).NotTo(HaveOccurred())
		obj := deploy()
		rules.Apply([]*unstructured.Unstructured{obj})
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		g.Expect(containers[0]).To(Equal(map[string]any{"name": "app"}))
		g.Expect(obj.GetAnnotations()).To(BeEmpty())
	})
}

func TestOwnerAndInventory(t *testing.T) {
	tests := []struct {
		name      string
		inventory *kustomizev1.ResourceInventory
		want      []inventory.Entry
	}{
		{name: "no inventory", want: nil},
		{name: "empty inventory", inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{}}, want: []inventory.Entry{}},
		{name: "entries in order", inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
			{ID: "prod_web_apps_Deployment", Version: "v1"}, {ID: "prod_cm__ConfigMap", Version: "v1"}}},
			want: []inventory.Entry{{ID: "prod_web_apps_Deployment", Version: "v1"}, {ID: "prod_cm__ConfigMap", Version: "v1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &kustomizev1.Kustomization{}
			obj.Name, obj.Namespace = "app", "flux-system"
			obj.Status.Inventory = tt.inventory
			g.Expect(Inventory(obj)).To(Equal(tt.want))
			g.Expect(Owner(obj)).To(Equal(ssa.Owner{Group: "kustomize.toolkit.fluxcd.io", Name: "app", Namespace: "flux-system"}))
		})
	}
}
