package drift

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/inventory"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/versions"
)

// compile compiles HelmRelease ignore rules as the controller does.
func compile(t *testing.T, rules ...kustomizev1.IgnoreRule) ssa.IgnoreRules {
	t.Helper()
	compiled, err := kspec.IgnoreRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

func setGreeting(v string) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, v, "data", "greeting")
	}
}

func setReplicas(n int64) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, n, "spec", "replicas")
	}
}

func setImage(image string) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = image
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	}
}

func addLabel(k, v string) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		labels := u.GetLabels()
		labels[k] = v
		u.SetLabels(labels)
	}
}

func TestDetect(t *testing.T) {
	deploymentRule := kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment"}}
	tests := []struct {
		name         string
		change       func(t *testing.T, r *installed)
		rules        []kustomizev1.IgnoreRule
		fieldManager string
		want         []string
	}{
		{
			name: "no drift right after the install",
		},
		{
			name:         "no drift whatever the field manager of the check",
			fieldManager: "someone-else",
		},
		{
			name: "a field the chart sets, edited by another manager",
			change: func(t *testing.T, r *installed) {
				r.edit(t, "v1", "ConfigMap", "rel-cm", setGreeting("edited"))
			},
			want: []string{"ConfigMap/%s/rel-cm changed"},
		},
		{
			name: "the same edit, checked by another field manager",
			change: func(t *testing.T, r *installed) {
				r.edit(t, "v1", "ConfigMap", "rel-cm", setGreeting("edited"))
			},
			fieldManager: "someone-else",
			want:         []string{"ConfigMap/%s/rel-cm changed"},
		},
		{
			name: "a deleted object",
			change: func(t *testing.T, r *installed) {
				r.remove(t, "v1", "Service", "rel-svc")
			},
			want: []string{"Service/%s/rel-svc missing"},
		},
		{
			name: "a label that only another manager sets",
			change: func(t *testing.T, r *installed) {
				r.edit(t, "v1", "ConfigMap", "rel-cm", addLabel("added-by", "someone"))
				r.edit(t, "apps/v1", "Deployment", "rel-web", addLabel("added-by", "someone"))
			},
		},
		{
			name: "an ignored field",
			change: func(t *testing.T, r *installed) {
				r.edit(t, "apps/v1", "Deployment", "rel-web", setReplicas(5))
			},
			rules: []kustomizev1.IgnoreRule{deploymentRule},
		},
		{
			name: "the same field without an ignore rule",
			change: func(t *testing.T, r *installed) {
				r.edit(t, "apps/v1", "Deployment", "rel-web", setReplicas(5))
			},
			want: []string{"Deployment/%s/rel-web changed"},
		},
		{
			name: "an ignore rule whose target selects another object",
			change: func(t *testing.T, r *installed) {
				r.edit(t, "apps/v1", "Deployment", "rel-web", setReplicas(5))
			},
			rules: []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "StatefulSet"}}},
			want:  []string{"Deployment/%s/rel-web changed"},
		},
		{
			name: "an object annotated driftDetection: disabled",
			change: func(t *testing.T, r *installed) {
				r.edit(t, "v1", "ConfigMap", "rel-free", func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, "edited", "data", "key")
				})
				r.remove(t, "v1", "ConfigMap", "rel-free")
			},
		},
		{
			name: "several drifts, in the manifest's order",
			change: func(t *testing.T, r *installed) {
				r.remove(t, "v1", "Service", "rel-svc")
				r.edit(t, "v1", "ConfigMap", "rel-cm", setGreeting("edited"))
				r.edit(t, "apps/v1", "Deployment", "rel-web", setImage("evil.example.com/web:v1"))
			},
			rules: []kustomizev1.IgnoreRule{deploymentRule},
			want:  []string{"ConfigMap/%s/rel-cm changed", "Service/%s/rel-svc missing", "Deployment/%s/rel-web changed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := install(t)
			if tt.change != nil {
				tt.change(t, r)
			}
			fm := tt.fieldManager
			if fm == "" {
				fm = helmFieldManager
			}
			report, err := Detect(context.Background(), r.manager(t, fm), r.objs, compile(t, tt.rules...))
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, e := range report.Entries {
				got = append(got, e.String())
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, fmt.Sprintf(w, r.ns))
			}
			g.Expect(got).To(Equal(want))
			g.Expect(report.Drifted()).To(Equal(len(want) > 0))
			g.Expect(report.InSync).To(Equal(r.inSync(t, report, fm)), "every object compared and not drifted, at its fields version")
		})
	}
}

// inSync returns the objects of the release that Detect compares (those
// not annotated driftDetection: disabled) less the drifted ones of report,
// each with the fields version of manager it has in the cluster.
func (r *installed) inSync(t *testing.T, report *Report, manager string) map[inventory.ObjMetadata]string {
	t.Helper()
	drifted := map[inventory.ObjMetadata]bool{}
	for _, id := range report.DriftedObjects() {
		drifted[id] = true
	}
	out := map[inventory.ObjMetadata]string{}
	for _, o := range r.objs {
		id := inventory.ObjMetadataOf(o)
		if Disabled(o) || drifted[id] {
			continue
		}
		out[id] = versions.FieldsDigest(r.get(t, o.GetAPIVersion(), o.GetKind(), o.GetName()), manager)
	}
	return out
}

// TestCorrect drifts a release in every way at once and corrects it: the
// edited field and the deleted object come back, the fields only another
// manager sets and the ignored fields stay, and nothing drifts afterwards.
func TestCorrect(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	r := install(t)
	m := r.manager(t, helmFieldManager)
	rules := compile(t,
		kustomizev1.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment"}},
		// Nobody changes the greeting: it is still Helm's field alone, and
		// correcting the ConfigMap's other drift must not delete it.
		kustomizev1.IgnoreRule{Paths: []string{"/data/greeting"}, Target: &kustomizev1.Selector{Kind: "ConfigMap"}},
	)

	r.edit(t, "v1", "ConfigMap", "rel-cm", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "red", "data", "color")
		addLabel("added-by", "someone")(u)
	})
	r.edit(t, "apps/v1", "Deployment", "rel-web", func(u *unstructured.Unstructured) {
		setReplicas(5)(u)
		setImage("evil.example.com/web:v1")(u)
	})
	r.remove(t, "v1", "Service", "rel-svc")

	report, err := Detect(ctx, m, r.objs, rules)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Summary()).To(Equal(fmt.Sprintf(
		"ConfigMap/%[1]s/rel-cm changed, Service/%[1]s/rel-svc missing, Deployment/%[1]s/rel-web changed", r.ns)))

	cs, err := Correct(ctx, m, report)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.Summary()).To(ContainSubstring(fmt.Sprintf("Service/%s/rel-svc created", r.ns)))
	g.Expect(cs.Summary()).To(ContainSubstring(fmt.Sprintf("ConfigMap/%s/rel-cm configured", r.ns)))
	g.Expect(cs.Summary()).To(ContainSubstring(fmt.Sprintf("Deployment/%s/rel-web configured", r.ns)))

	cm := r.get(t, "v1", "ConfigMap", "rel-cm")
	g.Expect(cm.Object["data"]).To(Equal(map[string]any{"greeting": "hello", "color": "blue"}))
	g.Expect(cm.GetLabels()).To(HaveKeyWithValue("added-by", "someone"))
	g.Expect(appliedBy(cm, helmFieldManager)).To(ContainSubstring(`"f:color"`), "the corrected field is the helm manager's again")

	web := r.get(t, "apps/v1", "Deployment", "rel-web")
	replicas, _, _ := unstructured.NestedInt64(web.Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(5)), "an ignored field keeps its live value")
	containers, _, _ := unstructured.NestedSlice(web.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0]).To(HaveKeyWithValue("image", "registry.example.com/web:v1"))

	svc := r.get(t, "v1", "Service", "rel-svc")
	g.Expect(svc).NotTo(BeNil())
	g.Expect(svc.GetLabels()).To(HaveKeyWithValue("helm.toolkit.fluxcd.io/name", "app"))

	after, err := Detect(ctx, m, r.objs, rules)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.Drifted()).To(BeFalse(), after.Summary())
	without, err := Detect(ctx, m, r.objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(without.Summary()).To(Equal(fmt.Sprintf("Deployment/%s/rel-web changed", r.ns)),
		"without the rules, only the ignored replica count differs")
}

// TestCorrectNothing checks that a report without drift writes nothing.
func TestCorrectNothing(t *testing.T) {
	g := NewWithT(t)
	r := install(t)
	m := r.manager(t, helmFieldManager)
	report, err := Detect(context.Background(), m, r.objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	before := r.get(t, "v1", "ConfigMap", "rel-cm").GetResourceVersion()
	cs, err := Correct(context.Background(), m, report)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.Entries).To(BeEmpty())
	g.Expect(r.get(t, "v1", "ConfigMap", "rel-cm").GetResourceVersion()).To(Equal(before))
}

// appliedBy returns the fields manager owns through apply in u, as JSON.
func appliedBy(u *unstructured.Unstructured, manager string) string {
	for _, e := range u.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	return ""
}

func TestSummary(t *testing.T) {
	entry := func(i int, k Kind) Entry {
		return Entry{Object: inventory.ObjMetadata{Namespace: "ns", Name: fmt.Sprintf("o%d", i), Kind: "ConfigMap"}, Kind: k}
	}
	var many []Entry
	for i := range 12 {
		many = append(many, entry(i, Changed))
	}
	tests := []struct {
		name    string
		report  *Report
		want    string
		drifted bool
	}{
		{name: "nil", report: nil, want: ""},
		{name: "empty", report: &Report{}, want: ""},
		{name: "two", report: &Report{Entries: []Entry{entry(1, Changed), entry(2, Missing)}},
			want: "ConfigMap/ns/o1 changed, ConfigMap/ns/o2 missing", drifted: true},
		{name: "cluster-scoped", report: &Report{Entries: []Entry{{Object: inventory.ObjMetadata{Name: "crd", Kind: "CustomResourceDefinition"}, Kind: Missing}}},
			want: "CustomResourceDefinition/crd missing", drifted: true},
		{name: "bounded", report: &Report{Entries: many},
			want: "ConfigMap/ns/o0 changed, ConfigMap/ns/o1 changed, ConfigMap/ns/o2 changed, ConfigMap/ns/o3 changed, " +
				"ConfigMap/ns/o4 changed, ConfigMap/ns/o5 changed, ConfigMap/ns/o6 changed, ConfigMap/ns/o7 changed, " +
				"ConfigMap/ns/o8 changed, ConfigMap/ns/o9 changed, and 2 more", drifted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.report.Summary()).To(Equal(tt.want))
			g.Expect(tt.report.Drifted()).To(Equal(tt.drifted))
		})
	}
}

func TestKeepIgnored(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "ns", "labels": map[string]any{"app": "web"}},
			"spec":     spec,
		}}
	}
	desired := obj(map[string]any{
		"replicas": int64(2),
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "web", "image": "web:v1", "resources": map[string]any{"cpu": "1"}},
		}}},
	})
	tests := []struct {
		name  string
		rules []kustomizev1.IgnoreRule
		live  *unstructured.Unstructured
		want  map[string]any
	}{
		{
			name:  "an ignored field takes the live value",
			rules: []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}}},
			live:  obj(map[string]any{"replicas": int64(5)}),
			want: map[string]any{"replicas": int64(5), "template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "web:v1", "resources": map[string]any{"cpu": "1"}}}}}},
		},
		{
			name:  "an ignored field the live object lacks is left out",
			rules: []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas", "/spec/template/spec/containers/0/resources"}}},
			live:  obj(map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web"}}}}}),
			want: map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "web:v1"}}}}},
		},
		{
			name:  "a field inside a list item",
			rules: []kustomizev1.IgnoreRule{{Paths: []string{"/spec/template/spec/containers/0/image"}}},
			live: obj(map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "web:v9"}}}}}),
			want: map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "web:v9", "resources": map[string]any{"cpu": "1"}}}}}},
		},
		{
			name:  "a rule for another kind changes nothing",
			rules: []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "StatefulSet"}}},
			live:  obj(map[string]any{"replicas": int64(5)}),
			want:  desired.Object["spec"].(map[string]any),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := desired.DeepCopy()
			liveBefore := tt.live.DeepCopy()
			got := keepIgnored(desired, tt.live, compile(t, tt.rules...))
			g.Expect(got.Object["spec"]).To(Equal(tt.want))
			g.Expect(got.GetLabels()).To(Equal(map[string]string{"app": "web"}))
			g.Expect(desired).To(Equal(before), "the manifest's object is not changed")
			g.Expect(tt.live).To(Equal(liveBefore), "the live object is not changed")
		})
	}
}
