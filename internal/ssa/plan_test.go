package ssa

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

// TestPlan checks that Plan tells what an apply would do to each object,
// with the dry run's answer, and writes nothing.
func TestPlan(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	_, err := m.ApplyAllStaged(ctx, parse(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: same, namespace: ${NS}}
data: {v: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: changed, namespace: ${NS}}
data: {v: "1"}
`), ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	newNS := ns + "-new"
	deleteLater(t, "v1", "Namespace", newNS)

	plan, err := m.Plan(ctx, parse(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: same, namespace: ${NS}}
data: {v: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: changed, namespace: ${NS}}
data: {v: "2"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: new, namespace: ${NS}}
data: {v: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ignored, namespace: ${NS}, annotations: {kustomize.toolkit.fluxcd.io/ssa: Ignore}}
---
apiVersion: v1
kind: Namespace
metadata: {name: `+newNS+`}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: inside, namespace: `+newNS+`}
`), ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	got := map[string]Planned{}
	for _, p := range plan {
		got[p.Object.Subject()] = p
	}
	g.Expect(plan).To(HaveLen(6))
	g.Expect(plan[0].Object.Name).To(Equal("same"), "in the order of the objects")

	same := got["ConfigMap/"+ns+"/same"]
	g.Expect(same.Action).To(Equal(ActionUnchanged))
	g.Expect(same.Live).NotTo(BeNil())

	changed := got["ConfigMap/"+ns+"/changed"]
	g.Expect(changed.Action).To(Equal(ActionConfigured))
	g.Expect(changed.Live.Object["data"]).To(Equal(map[string]any{"v": "1"}))
	g.Expect(changed.Result.Object["data"]).To(Equal(map[string]any{"v": "2"}))
	g.Expect(changed.Result.GetLabels()).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", "app"), "the owner labels are applied")

	created := got["ConfigMap/"+ns+"/new"]
	g.Expect(created.Action).To(Equal(ActionCreated))
	g.Expect(created.Live).To(BeNil())
	g.Expect(created.Result.GetName()).To(Equal("new"))

	g.Expect(got["ConfigMap/"+ns+"/ignored"].Action).To(Equal(ActionSkipped))
	g.Expect(got["ConfigMap/"+ns+"/ignored"].Result).To(BeNil())
	g.Expect(got["Namespace/"+newNS].Action).To(Equal(ActionCreated))
	inside := got["ConfigMap/"+newNS+"/inside"]
	g.Expect(inside.Action).To(Equal(ActionCreated), "an object in a namespace the set brings is created")
	g.Expect(inside.Result.GetLabels()).To(HaveKey("kustomize.toolkit.fluxcd.io/namespace"))

	g.Expect(get(t, "v1", "ConfigMap", ns, "changed").Object["data"]).To(Equal(map[string]any{"v": "1"}), "nothing is written")
	g.Expect(get(t, "v1", "ConfigMap", ns, "new")).To(BeNil())
	g.Expect(get(t, "v1", "Namespace", "", newNS)).To(BeNil())
}

// TestPlanRefusal checks that an object the API server refuses is a
// *ValidationError.
func TestPlanRefusal(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	_, err := newManager(t, ns).Plan(context.Background(), parse(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name, namespace: ${NS}}
`), ApplyOptions{})
	var invalid *ValidationError
	g.Expect(err).To(BeAssignableToTypeOf(invalid))
	g.Expect(err.Error()).To(ContainSubstring("Bad_Name"))
}
