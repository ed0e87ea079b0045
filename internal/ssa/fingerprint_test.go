package ssa

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// fingerprintedDeployment is a Deployment as an apply by
// kustomize-controller leaves it, with fields that others own too.
const fingerprintedDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
  resourceVersion: "10"
  annotations:
    deployment.kubernetes.io/revision: "1"
  labels:
    app: web
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:labels:
          f:app: {}
      f:spec:
        f:replicas: {}
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:image: {}
                f:name: {}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          f:deployment.kubernetes.io/revision: {}
spec:
  replicas: 0
  template:
    spec:
      containers:
      - name: web
        image: nginx:1
        imagePullPolicy: Always
status:
  observedGeneration: 1
`

func TestFingerprint(t *testing.T) {
	base := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(fingerprintedDeployment), &base.Object); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(u *unstructured.Unstructured)
		same   bool
	}{
		{name: "nothing changed", change: func(*unstructured.Unstructured) {}, same: true},
		{
			name: "status and resourceVersion changed",
			change: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(2), "status", "observedGeneration")
				u.SetResourceVersion("11")
			},
			same: true,
		},
		{
			name: "a field another manager owns changed",
			change: func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "2"})
			},
			same: true,
		},
		{
			name: "a field nobody applied changed in an owned list item",
			change: func(u *unstructured.Unstructured) {
				setContainerField(u, "imagePullPolicy", "IfNotPresent")
			},
			same: true,
		},
		{
			name: "an owned value changed",
			change: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
			},
		},
		{
			name:   "an owned field in a list item changed",
			change: func(u *unstructured.Unstructured) { setContainerField(u, "image", "nginx:2") },
		},
		{
			name:   "an owned label is gone",
			change: func(u *unstructured.Unstructured) { u.SetLabels(nil) },
		},
		{
			name: "the owned fields changed",
			change: func(u *unstructured.Unstructured) {
				mf := u.GetManagedFields()
				mf[0].FieldsV1.Raw = []byte(`{"f:spec":{"f:replicas":{}}}`)
				u.SetManagedFields(mf)
			},
		},
	}
	want := fingerprint(base, testFieldManager)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := base.DeepCopy()
			tt.change(u)
			got := fingerprint(u, testFieldManager)
			g.Expect(got).To(HavePrefix("owned:"))
			if tt.same {
				g.Expect(got).To(Equal(want))
			} else {
				g.Expect(got).NotTo(Equal(want))
			}
		})
	}

	t.Run("an object the manager owns nothing of is digested whole", func(t *testing.T) {
		g := NewWithT(t)
		u := base.DeepCopy()
		u.SetManagedFields(u.GetManagedFields()[1:])
		whole := fingerprint(u, testFieldManager)
		g.Expect(whole).To(HavePrefix("whole:"))
		u.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "2"})
		g.Expect(fingerprint(u, testFieldManager)).NotTo(Equal(whole), "any change counts")
		u.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "1"})
		u.SetResourceVersion("12")
		g.Expect(fingerprint(u, testFieldManager)).To(Equal(whole), "volatile fields do not count")
	})
}

func setContainerField(u *unstructured.Unstructured, field, value string) {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)[field] = value
	_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
}

// TestVerify applies objects and checks them again against the cluster:
// what others do to fields the manager does not own passes, an edit of an
// owned field or a deletion is drift.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	objs := parse(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: edited
  namespace: ${NS}
data:
  k: desired
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: annotated
  namespace: ${NS}
data:
  k: desired
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ${NS}
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ignored
  namespace: ${NS}
  annotations:
    kustomize.toolkit.fluxcd.io/ssa: Ignore
`)
	g := NewWithT(t)
	cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	applied := cs.Applied()
	g.Expect(applied).To(HaveLen(4))
	for _, a := range applied {
		g.Expect(a.Fingerprint).NotTo(BeEmpty(), a.Entry.ID)
	}

	live, err := m.Verify(ctx, applied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(live).To(HaveLen(3), "the ignored object is not read")
	g.Expect(live).To(HaveKey(ns + "_web_apps_Deployment"))

	// A second apply of the same objects leaves the same fingerprints.
	cs2, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs2.Applied()).To(Equal(applied))

	// Another manager annotates an object and scales the Deployment's
	// status: not drift.
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "annotated"}, cm)).To(Succeed())
	cm.Annotations = map[string]string{"note": "by hand"}
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-annotate"))).To(Succeed())
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep)).To(Succeed())
	dep.Status.ObservedGeneration = dep.Generation
	g.Expect(env.Client.Status().Update(ctx, dep, client.FieldOwner("kube-controller-manager"))).To(Succeed())
	_, err = m.Verify(ctx, applied)
	g.Expect(err).NotTo(HaveOccurred())

	// An edit of an owned field is drift, and so is a deletion.
	edit(t, ns, "edited", "kubectl-edit", map[string]string{"k": "drifted"})
	_, err = m.Verify(ctx, applied)
	g.Expect(err).To(MatchError(ErrDrifted))
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/edited"))
	g.Expect(err.Error()).NotTo(ContainSubstring("drifted"), "no value is shown")

	cs3, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = m.Verify(ctx, cs3.Applied())
	g.Expect(err).NotTo(HaveOccurred(), "the apply that reverted the drift leaves fingerprints that verify")

	g.Expect(env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "annotated"}})).To(Succeed())
	_, err = m.Verify(ctx, cs3.Applied())
	g.Expect(err).To(MatchError(ErrDrifted))
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/annotated is gone"))
}

// versionMap is a VersionReader that knows the versions it holds, by
// kind/namespace/name, and the kinds it was asked to watch.
type versionMap struct {
	versions map[string]string
	watched  []schema.GroupVersionKind
}

func (v *versionMap) ResourceVersion(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	version, ok := v.versions[gvk.Kind+"/"+namespace+"/"+name]
	return version, ok
}

func (v *versionMap) Watch(_ context.Context, gvk schema.GroupVersionKind) {
	v.watched = append(v.watched, gvk)
}

// TestVerifyWithVersions checks that Verify reads only the objects whose
// version moved since they were last seen, and records the version of
// those it reads.
func TestVerifyWithVersions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	versions := &versionMap{versions: map[string]string{}}
	c := &countingClient{Client: env.Client}
	m, err := New(c, env.Client.RESTMapper(), Options{FieldManager: testFieldManager, Owner: Owner{Name: "app", Namespace: ns}, Versions: versions})
	g.Expect(err).NotTo(HaveOccurred())
	objs := []*unstructured.Unstructured{configMap(ns, "a", nil, map[string]any{"k": "1"}), configMap(ns, "b", nil, map[string]any{"k": "1"})}
	cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{Fresh: true})
	g.Expect(err).NotTo(HaveOccurred())
	applied := cs.Applied()
	for _, a := range applied {
		g.Expect(a.ResourceVersion).NotTo(BeEmpty(), "the apply's answer gives the version")
	}
	g.Expect(versions.watched).To(Equal([]schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}}),
		"the apply asks for the watch of the kind it applied, once")
	live := func(name string) string { return get(t, "v1", "ConfigMap", ns, name).GetResourceVersion() }

	_, err = m.Verify(ctx, applied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.gets.Load()).To(BeEquivalentTo(2), "versions not known: both read")

	versions.versions["ConfigMap/"+ns+"/a"], versions.versions["ConfigMap/"+ns+"/b"] = live("a"), live("b")
	_, err = m.Verify(ctx, applied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.gets.Load()).To(BeEquivalentTo(2), "versions unchanged: nothing read")

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, cm)).To(Succeed())
	cm.Annotations = map[string]string{"note": "by hand"}
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-annotate"))).To(Succeed())
	versions.versions["ConfigMap/"+ns+"/b"] = live("b")
	_, err = m.Verify(ctx, applied)
	g.Expect(err).NotTo(HaveOccurred(), "another manager's annotation is no drift")
	g.Expect(c.gets.Load()).To(BeEquivalentTo(3), "the object whose version moved is read")
	g.Expect(applied[1].ResourceVersion).To(Equal(live("b")), "and its new version recorded")
	_, err = m.Verify(ctx, applied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.gets.Load()).To(BeEquivalentTo(3))

	edit(t, ns, "a", "kubectl-edit", map[string]string{"k": "drifted"})
	versions.versions["ConfigMap/"+ns+"/a"] = live("a")
	_, err = m.Verify(ctx, applied)
	g.Expect(err).To(MatchError(ErrDrifted), "an edit moves the version and is found")
}
