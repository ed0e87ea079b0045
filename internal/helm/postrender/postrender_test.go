package postrender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
)

// stream is a rendered stream in an order that kustomize's legacy sort
// would change (Service before Namespace, a hook first), with the
// annotations Helm sets.
const stream = `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "-5"
    postrenderer.helm.sh/postrender-filename: templates/job.yaml
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: registry.example.com/app:v1
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    tier: front
  annotations:
    postrenderer.helm.sh/postrender-filename: templates/service.yaml
spec:
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    tier: front
  annotations:
    postrenderer.helm.sh/postrender-filename: templates/deployment.yaml
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: registry.example.com/app:v1
      - name: sidecar
        image: busybox:1.36
---
apiVersion: v1
kind: Namespace
metadata:
  name: extra
  annotations:
    postrenderer.helm.sh/postrender-filename: templates/namespace.yaml
`

func newRelease(prs []helmv2.PostRenderer, cm *kustomizev1.CommonMetadata) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"}}
	hr.Spec.PostRenderers = prs
	hr.Spec.CommonMetadata = cm
	return hr
}

func kustomizeWith(patches []kustomizev1.Patch, images []kustomizev1.Image) helmv2.PostRenderer {
	return helmv2.PostRenderer{Kustomize: &helmv2.Kustomize{Patches: patches, Images: images}}
}

// render runs hr's post-renderer on in and decodes the output.
func render(t *testing.T, hr *helmv2.HelmRelease, in string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	pr, err := New(hr)
	if err != nil {
		return nil, err
	}
	out, err := pr.Run(bytes.NewBufferString(in))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		u := &unstructured.Unstructured{}
		data, err := yaml.YAMLToJSON([]byte(doc))
		if err == nil {
			err = u.UnmarshalJSON(data)
		}
		if err != nil {
			t.Fatalf("decoding %q: %v", doc, err)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func images(o *unstructured.Unstructured, path ...string) []string {
	containers, _, _ := unstructured.NestedSlice(o.Object, append(path, "containers")...)
	var out []string
	for _, c := range containers {
		out = append(out, c.(map[string]any)["image"].(string))
	}
	return out
}

var podSpec = []string{"spec", "template", "spec"}

func TestRun(t *testing.T) {
	ownerLabels := map[string]string{helmv2.NameLabel: "app", helmv2.NamespaceLabel: "team"}
	tests := []struct {
		name  string
		hr    *helmv2.HelmRelease
		check func(g *WithT, objs []*unstructured.Unstructured)
	}{
		{
			name: "no post-renderers: only the owner labels",
			hr:   newRelease(nil, nil),
			check: func(g *WithT, objs []*unstructured.Unstructured) {
				svc := find(objs, "Service")
				g.Expect(svc.GetLabels()).To(Equal(map[string]string{"tier": "front", helmv2.NameLabel: "app", helmv2.NamespaceLabel: "team"}))
				g.Expect(find(objs, "Namespace").GetLabels()).To(Equal(ownerLabels))
				dep := find(objs, "Deployment")
				g.Expect(dep.Object["spec"]).To(HaveKeyWithValue("replicas", int64(1)))
				tmpl, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
				g.Expect(tmpl).To(Equal(map[string]string{"app": "web"}), "pod template labels untouched")
			},
		},
		{
			name: "strategic merge patch naming its object",
			hr: newRelease([]helmv2.PostRenderer{kustomizeWith([]kustomizev1.Patch{{
				Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n",
			}}, nil)}, nil),
			check: func(g *WithT, objs []*unstructured.Unstructured) {
				replicas, _, _ := unstructured.NestedInt64(find(objs, "Deployment").Object, "spec", "replicas")
				g.Expect(replicas).To(Equal(int64(3)))
			},
		},
		{
			name: "strategic merge patch with a label selector target",
			hr: newRelease([]helmv2.PostRenderer{kustomizeWith([]kustomizev1.Patch{{
				Patch:  "apiVersion: v1\nkind: Any\nmetadata:\n  name: any\n  annotations:\n    patched: \"yes\"\n",
				Target: &kustomizev1.Selector{LabelSelector: "tier=front"},
			}}, nil)}, nil),
			check: func(g *WithT, objs []*unstructured.Unstructured) {
				g.Expect(find(objs, "Service").GetAnnotations()).To(HaveKeyWithValue("patched", "yes"))
				g.Expect(find(objs, "Deployment").GetAnnotations()).To(HaveKeyWithValue("patched", "yes"))
				g.Expect(find(objs, "Job").GetAnnotations()).NotTo(HaveKey("patched"))
			},
		},
		{
			name: "JSON 6902 patch with a kind target",
			hr: newRelease([]helmv2.PostRenderer{kustomizeWith([]kustomizev1.Patch{{
				Patch:  `[{"op":"replace","path":"/spec/ports/0/port","value":8080},{"op":"add","path":"/metadata/labels/extra","value":"x"}]`,
				Target: &kustomizev1.Selector{Kind: "Service", Name: "w.b"},
			}}, nil)}, nil),
			check: func(g *WithT, objs []*unstructured.Unstructured) {
				ports, _, _ := unstructured.NestedSlice(find(objs, "Service").Object, "spec", "ports")
				g.Expect(ports[0]).To(HaveKeyWithValue("port", int64(8080)))
				g.Expect(find(objs, "Service").GetLabels()).To(HaveKeyWithValue("extra", "x"))
				g.Expect(find(objs, "Deployment").GetLabels()).NotTo(HaveKey("extra"))
			},
		},
		{
			name: "images: new name and tag, digest",
			hr: newRelease([]helmv2.PostRenderer{kustomizeWith(nil, []kustomizev1.Image{
				{Name: "registry.example.com/app", NewName: "mirror.example.com/app", NewTag: "v2"},
				{Name: "busybox", Digest: "sha256:" + strings.Repeat("a", 64)},
			})}, nil),
			check: func(g *WithT, objs []*unstructured.Unstructured) {
				g.Expect(images(find(objs, "Deployment"), podSpec...)).To(Equal([]string{
					"mirror.example.com/app:v2", "busybox@sha256:" + strings.Repeat("a", 64)}))
				g.Expect(images(find(objs, "Job"), podSpec...)).To(Equal([]string{"mirror.example.com/app:v2"}))
			},
		},
		{
			name: "post-renderers run in order",
			hr: newRelease([]helmv2.PostRenderer{
				kustomizeWith(nil, []kustomizev1.Image{{Name: "busybox", NewTag: "first"}}),
				{}, // no kustomize: skipped
				kustomizeWith([]kustomizev1.Patch{{
					Patch:  `[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"busybox:second"}]`,
					Target: &kustomizev1.Selector{Kind: "Deployment"},
				}}, nil),
			}, nil),
			check: func(g *WithT, objs []*unstructured.Unstructured) {
				g.Expect(images(find(objs, "Deployment"), podSpec...)[1]).To(Equal("busybox:second"))
			},
		},
		{
			name: "common metadata on every object, owner labels win",
			hr: newRelease(nil, &kustomizev1.CommonMetadata{
				Labels:      map[string]string{"team": "blue", "tier": "common", helmv2.NameLabel: "spoofed", "enabled": "true"},
				Annotations: map[string]string{"owner": "ops", "count": "1"},
			}),
			check: func(g *WithT, objs []*unstructured.Unstructured) {
				for _, o := range objs {
					labels, _, _ := unstructured.NestedMap(o.Object, "metadata", "labels")
					g.Expect(labels).To(HaveKeyWithValue("enabled", "true"), "a value YAML would read as a boolean stays a string")
					annotations, _, _ := unstructured.NestedMap(o.Object, "metadata", "annotations")
					g.Expect(annotations).To(HaveKeyWithValue("count", "1"))
					g.Expect(o.GetLabels()).To(HaveKeyWithValue("team", "blue"), o.GetKind())
					g.Expect(o.GetLabels()).To(HaveKeyWithValue("tier", "common"), o.GetKind())
					g.Expect(o.GetLabels()).To(HaveKeyWithValue(helmv2.NameLabel, "app"), o.GetKind())
					g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("owner", "ops"), o.GetKind())
				}
				dep := find(objs, "Deployment")
				tmpl, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
				g.Expect(tmpl).To(Equal(map[string]string{"app": "web"}), "pod template labels untouched")
				sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
				g.Expect(sel).To(Equal(map[string]string{"app": "web"}), "selector untouched")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(t, tt.hr, stream)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(kinds(objs)).To(Equal([]string{"Job/migrate", "Service/web", "Deployment/web", "Namespace/extra"}),
				"the order of the documents is kept")
			for _, o := range objs {
				g.Expect(o.GetLabels()).To(HaveKeyWithValue(helmv2.NameLabel, "app"))
				g.Expect(o.GetLabels()).To(HaveKeyWithValue(helmv2.NamespaceLabel, "team"))
				g.Expect(o.GetAnnotations()).To(HaveKey("postrenderer.helm.sh/postrender-filename"))
				for k := range o.GetAnnotations() {
					g.Expect(k).NotTo(ContainSubstring("config.kubernetes.io"), "kustomize's own annotations are removed")
				}
			}
			job := find(objs, "Job")
			g.Expect(job.GetAnnotations()).To(HaveKeyWithValue("helm.sh/hook", "pre-install"))
			g.Expect(job.GetAnnotations()).To(HaveKeyWithValue("helm.sh/hook-weight", "-5"))
			tt.check(g, objs)
		})
	}
}

// TestRunDuplicateWithoutKustomize checks that a stream holding an object
// twice (a hook and a template) passes when kustomize is not needed.
func TestRunDuplicateWithoutKustomize(t *testing.T) {
	g := NewWithT(t)
	in := "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  annotations:\n    helm.sh/hook: pre-install\n" +
		"---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n"
	objs, err := render(t, newRelease(nil, &kustomizev1.CommonMetadata{Labels: map[string]string{"a": "b"}}), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	g.Expect(objs[0].GetAnnotations()).To(HaveKeyWithValue("helm.sh/hook", "pre-install"))
	g.Expect(objs[1].GetLabels()).To(HaveKeyWithValue("a", "b"))
}

func TestNewInvalid(t *testing.T) {
	tests := []struct {
		name   string
		pr     helmv2.PostRenderer
		errSub string
	}{
		{
			name:   "empty patch",
			pr:     kustomizeWith([]kustomizev1.Patch{{Patch: "  \n"}}, nil),
			errSub: "spec.postRenderers[0].kustomize.patches[0]: the patch is empty",
		},
		{
			name: "JSON 6902 patch without target",
			pr: kustomizeWith([]kustomizev1.Patch{
				{Patch: "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"},
				{Patch: `[{"op":"remove","path":"/spec"}]`},
			}, nil),
			errSub: "spec.postRenderers[0].kustomize.patches[1]: a JSON 6902 patch needs a target",
		},
		{
			name:   "not YAML",
			pr:     kustomizeWith([]kustomizev1.Patch{{Patch: "a: [b\n", Target: &kustomizev1.Selector{Kind: "Service"}}}, nil),
			errSub: "spec.postRenderers[0].kustomize.patches[0]: the patch is neither a strategic merge patch nor a JSON 6902 patch",
		},
		{
			name:   "a scalar",
			pr:     kustomizeWith([]kustomizev1.Patch{{Patch: "just a string"}}, nil),
			errSub: "spec.postRenderers[0].kustomize.patches[0]: the patch is neither a strategic merge patch nor a JSON 6902 patch: document 0 is not a map",
		},
		{
			name:   "image without name",
			pr:     kustomizeWith(nil, []kustomizev1.Image{{NewTag: "v2"}}),
			errSub: "spec.postRenderers[0].kustomize.images[0]: the name of the image to replace is required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(newRelease([]helmv2.PostRenderer{tt.pr}, nil))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.errSub))
		})
	}
}

func TestRunInvalid(t *testing.T) {
	tests := []struct {
		name   string
		prs    []helmv2.PostRenderer
		errSub []string
	}{
		{
			name: "JSON 6902 operation on a missing path",
			prs: []helmv2.PostRenderer{{}, kustomizeWith([]kustomizev1.Patch{{
				Patch:  `[{"op":"replace","path":"/spec/missing/field","value":1}]`,
				Target: &kustomizev1.Selector{Kind: "Service"},
			}}, nil)},
			errSub: []string{"post-rendering with spec.postRenderers[1].kustomize: "},
		},
		{
			name: "strategic merge patch of an object that is not rendered",
			prs: []helmv2.PostRenderer{kustomizeWith([]kustomizev1.Patch{{
				Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nope\ndata:\n  a: b\n",
			}}, nil)},
			errSub: []string{"post-rendering with spec.postRenderers[0].kustomize: ", "nope"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := render(t, newRelease(tt.prs, nil), stream)
			g.Expect(err).To(HaveOccurred())
			for _, s := range tt.errSub {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
}

func TestDigests(t *testing.T) {
	prs := []helmv2.PostRenderer{kustomizeWith(nil, []kustomizev1.Image{{Name: "a", NewTag: "v1"}})}
	other := []helmv2.PostRenderer{kustomizeWith(nil, []kustomizev1.Image{{Name: "a", NewTag: "v2"}})}
	cm := &kustomizev1.CommonMetadata{Labels: map[string]string{"a": "b"}}
	tests := []struct {
		name     string
		a, b     *helmv2.HelmRelease
		digest   func(*helmv2.HelmRelease) string
		same     bool
		emptyOfA bool
	}{
		{name: "no post-renderers digest as empty", a: newRelease(nil, nil), b: newRelease(nil, nil), digest: Digest, same: true, emptyOfA: true},
		{name: "equal post-renderers", a: newRelease(prs, nil), b: newRelease(prs, cm), digest: Digest, same: true},
		{name: "changed post-renderers", a: newRelease(prs, nil), b: newRelease(other, nil), digest: Digest},
		{name: "an empty list is not unset", a: newRelease([]helmv2.PostRenderer{}, nil), b: newRelease(nil, nil), digest: Digest},
		{name: "no common metadata digests as empty", a: newRelease(prs, nil), b: newRelease(other, nil), digest: CommonMetadataDigest, same: true, emptyOfA: true},
		{name: "changed common metadata", a: newRelease(nil, cm), b: newRelease(nil, &kustomizev1.CommonMetadata{Labels: map[string]string{"a": "c"}}), digest: CommonMetadataDigest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			da, db := tt.digest(tt.a), tt.digest(tt.b)
			g.Expect(da == db).To(Equal(tt.same))
			if tt.emptyOfA {
				g.Expect(da).To(BeEmpty())
			} else {
				g.Expect(da).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
			}
		})
	}
	// The digest covers the JSON encoding and a newline.
	sum := sha256.Sum256([]byte("[]\n"))
	NewWithT(t).Expect(Digest(newRelease([]helmv2.PostRenderer{}, nil))).To(Equal("sha256:" + hex.EncodeToString(sum[:])))
}
