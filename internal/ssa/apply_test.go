package ssa

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestApplyAllStagedStages(t *testing.T) {
	tests := []struct {
		name   string
		mapper func(t *testing.T) (client.Client, meta.RESTMapper)
	}{
		{
			name: "controller-runtime dynamic mapper",
			mapper: func(*testing.T) (client.Client, meta.RESTMapper) {
				return env.Client, env.Client.RESTMapper()
			},
		},
		{
			// This mapper does not look again by itself when its cache
			// is fresh: the Manager must reset it after stage 1.
			name: "client-go deferred discovery mapper",
			mapper: func(t *testing.T) (client.Client, meta.RESTMapper) {
				dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
				if err != nil {
					t.Fatal(err)
				}
				mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
				c, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Mapper: mapper})
				if err != nil {
					t.Fatal(err)
				}
				// Warm the cache, so that it is fresh and lacks the CRDs.
				if _, err := mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
					t.Fatal(err)
				}
				return c, mapper
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mapper := tt.mapper(t)
			testStages(t, c, mapper)
		})
	}
}

// testStages applies a set whose every object depends on an earlier one,
// in the worst order, twice.
func testStages(t *testing.T, c client.Client, mapper meta.RESTMapper) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m, err := New(c, mapper, Options{FieldManager: testFieldManager, Owner: Owner{Name: "app", Namespace: ns}})
	g.Expect(err).NotTo(HaveOccurred())
	cleanupCRDs(t, ns)
	deleteLater(t, "v1", "Namespace", ns+"-app")
	deleteLater(t, "scheduling.k8s.io/v1", "PriorityClass", ns+"-high")
	deleteLater(t, "rbac.authorization.k8s.io/v1", "ClusterRole", ns+"-reader")
	deleteLater(t, groupFor(ns)+"/v1", "WidgetClass", ns+"-gold")

	// The order is the reverse of what the cluster needs: every dependent
	// object comes before what it depends on.
	objs := parse(t, ns, `
apiVersion: ${GROUP}/v1
kind: Widget
metadata: {name: w, namespace: ${NS}-app}
spec: {size: 3, color: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: ${NS}-app}
data: {k: v}
---
apiVersion: ${GROUP}/v1
kind: WidgetClass
metadata: {name: ${NS}-gold}
tier: gold
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: ${NS}-high, namespace: ${NS}} # cluster-scoped: the namespace is dropped
value: 1000
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${NS}-reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: v1
kind: Namespace
metadata: {name: ${NS}-app}
`+"\n---\n"+crdManifest)

	cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	group := groupFor(ns)
	g.Expect(cs.String()).To(Equal(strings.Join([]string{
		"ClusterRole/" + ns + "-reader created",
		"Namespace/" + ns + "-app created",
		"CustomResourceDefinition/widgets." + group + " created",
		"CustomResourceDefinition/widgetclasses." + group + " created",
		"WidgetClass/" + ns + "-gold created",
		"PriorityClass/" + ns + "-high created",
		"Widget/" + ns + "-app/w created",
		"ConfigMap/" + ns + "-app/cfg created",
	}, "\n")))

	w := get(t, group+"/v1", "Widget", ns+"-app", "w")
	g.Expect(w).NotTo(BeNil())
	g.Expect(w.GetLabels()).To(Equal(map[string]string{
		"kustomize.toolkit.fluxcd.io/name":      "app",
		"kustomize.toolkit.fluxcd.io/namespace": ns,
	}))
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	g.Expect(size).To(Equal(int64(3)))
	g.Expect(get(t, "v1", "ConfigMap", ns+"-app", "cfg")).NotTo(BeNil())

	// A second apply writes nothing.
	before := map[string]string{}
	for _, o := range objs {
		live := get(t, o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName())
		g.Expect(live).NotTo(BeNil(), o.GetKind())
		before[o.GetKind()+"/"+o.GetName()] = live.GetResourceVersion()
	}
	cs, err = m.ApplyAllStaged(ctx, objs, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.Changed()).To(BeFalse(), cs.String())
	g.Expect(cs.Summary()).To(BeEmpty())
	for _, o := range objs {
		live := get(t, o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName())
		g.Expect(live.GetResourceVersion()).To(Equal(before[o.GetKind()+"/"+o.GetName()]), o.GetKind())
	}

	// The inventory of the change set names every object once.
	g.Expect(cs.Inventory()).To(HaveLen(len(objs)))
}

func TestApplyAllStagedUnchanged(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	objs := parse(t, ns, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${NS}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${NS}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: v1
kind: Secret
metadata: {name: data, namespace: ${NS}}
data: {password: aHVudGVyMg==}
---
apiVersion: v1
kind: Secret
metadata: {name: string-data, namespace: ${NS}}
stringData: {password: hunter2}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: ${NS}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: ${NS}}
rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]
`)
	tests := []struct {
		name string
		want Action
	}{
		{name: "first apply creates", want: ActionCreated},
		{name: "second apply writes nothing", want: ActionUnchanged},
		{name: "third apply writes nothing", want: ActionUnchanged},
	}
	versions := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, c := range cs.Entries {
				g.Expect(c.Action).To(Equal(tt.want), c.String())
			}
			for _, o := range objs {
				live := get(t, o.GetAPIVersion(), o.GetKind(), ns, o.GetName())
				key := o.GetKind() + "/" + o.GetName()
				if tt.want == ActionUnchanged {
					g.Expect(live.GetResourceVersion()).To(Equal(versions[key]), key)
				}
				versions[key] = live.GetResourceVersion()
			}
		})
	}

	t.Run("a changed object is configured, the others stay unchanged", func(t *testing.T) {
		g := NewWithT(t)
		changed := make([]*unstructured.Unstructured, len(objs))
		for i, o := range objs {
			changed[i] = o.DeepCopy()
		}
		g.Expect(unstructured.SetNestedField(changed[0].Object, int64(3), "spec", "replicas")).To(Succeed())
		cs, err := m.ApplyAllStaged(ctx, changed, ApplyOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cs.Summary()).To(Equal("Deployment/" + ns + "/web configured"))
	})
}

func TestValidate(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	valid := `
apiVersion: v1
kind: ConfigMap
metadata: {name: valid, namespace: ${NS}}
data: {k: v}
`
	tests := []struct {
		name      string
		manifests string
		wantErr   []string
	}{
		{
			name: "invalid object",
			manifests: valid + `---
apiVersion: v1
kind: Service
metadata: {name: bad, namespace: ${NS}}
spec: {ports: [{port: 700000}]}
`,
			wantErr: []string{"Service/${NS}/bad: ", "spec.ports[0].port: Invalid value: 700000"},
		},
		{
			name: "two invalid objects are both named",
			manifests: valid + `---
apiVersion: v1
kind: Service
metadata: {name: bad1, namespace: ${NS}}
spec: {ports: [{port: 700000}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad2, namespace: ${NS}}
spec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: b}}, spec: {containers: [{name: c, image: i}]}}}
`,
			wantErr: []string{"Service/${NS}/bad1: ", "Deployment/${NS}/bad2: ", "does not match template"},
		},
		{
			name:      "unknown kind",
			manifests: valid + "---\napiVersion: nowhere.windlass.test/v1\nkind: Ghost\nmetadata: {name: g, namespace: ${NS}}\n",
			wantErr:   []string{"Ghost/${NS}/g: ", "no matches for kind \"Ghost\""},
		},
		{
			name:      "namespaced object without a namespace",
			manifests: valid + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: nons}\n",
			wantErr:   []string{"ConfigMap/nons: ConfigMap is namespaced and the object has no namespace"},
		},
		{
			name:      "object in a namespace that does not exist",
			manifests: valid + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: lost, namespace: ${NS}-missing}\n",
			wantErr:   []string{"ConfigMap/${NS}-missing/lost: ", "not found"},
		},
		{
			name:      "duplicate",
			manifests: valid + "---\n" + valid,
			wantErr:   []string{"ConfigMap/${NS}/valid: the object appears more than once"},
		},
		{
			name:      "unknown policy",
			manifests: valid + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: p, namespace: ${NS}, annotations: {kustomize.toolkit.fluxcd.io/ssa: Replace}}\n",
			wantErr:   []string{"ConfigMap/${NS}/p: unknown kustomize.toolkit.fluxcd.io/ssa value \"Replace\""},
		},
		{
			name:      "missing identity",
			manifests: valid + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: ${NS}}\n",
			wantErr:   []string{"apiVersion, kind and metadata.name are required"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := parse(t, ns, tt.manifests)
			for _, op := range []string{"Validate", "ApplyAllStaged"} {
				g := NewWithT(t)
				var err error
				if op == "Validate" {
					err = m.Validate(ctx, objs, ApplyOptions{})
				} else {
					var cs *ChangeSet
					cs, err = m.ApplyAllStaged(ctx, objs, ApplyOptions{})
					g.Expect(cs.Entries).To(BeEmpty(), op)
				}
				var verr *ValidationError
				g.Expect(err).To(BeAssignableToTypeOf(verr), op)
				for _, want := range tt.wantErr {
					g.Expect(err.Error()).To(ContainSubstring(strings.ReplaceAll(want, "${NS}", ns)), op)
				}
				// Nothing was applied, the valid object included.
				for _, o := range objs {
					if o.GetName() != "" && o.GetNamespace() != "" && o.GetKind() != "Ghost" {
						g.Expect(get(t, o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName())).To(BeNil(), op+" "+o.GetName())
					}
				}
			}
		})
	}

	t.Run("objects that need stage 1 are left for ApplyAllStaged", func(t *testing.T) {
		g := NewWithT(t)
		cleanupCRDs(t, ns)
		objs := parse(t, ns, crdManifest+"\n---\n"+`
apiVersion: v1
kind: Namespace
metadata: {name: ${NS}-later}
---
apiVersion: ${GROUP}/v1
kind: Widget
metadata: {name: w, namespace: ${NS}}
spec: {size: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ${NS}-later}
`)
		g.Expect(m.Validate(ctx, objs, ApplyOptions{})).To(Succeed())
		g.Expect(get(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets."+groupFor(ns))).To(BeNil())
		g.Expect(get(t, "v1", "Namespace", "", ns+"-later")).To(BeNil())
	})

	t.Run("a custom resource invalid against its new CRD fails after stage 1", func(t *testing.T) {
		g := NewWithT(t)
		cleanupCRDs(t, ns)
		objs := parse(t, ns, crdManifest+"\n---\n"+`
apiVersion: ${GROUP}/v1
kind: Widget
metadata: {name: w, namespace: ${NS}}
spec: {size: "not a number"}
`)
		cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
		var verr *ValidationError
		g.Expect(err).To(BeAssignableToTypeOf(verr))
		g.Expect(err.Error()).To(ContainSubstring("Widget/" + ns + "/w: "))
		g.Expect(err.Error()).To(ContainSubstring("spec.size"))
		// Stage 1 went in; the change set says so, for the inventory.
		g.Expect(actions(cs)).To(HaveKeyWithValue("CustomResourceDefinition/widgets."+groupFor(ns), ActionCreated))
		g.Expect(actions(cs)).NotTo(HaveKey("Widget/" + ns + "/w"))
	})
}

func TestApplyAllStagedStage1Failures(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	m := newManager(t, ns)
	deleteLater(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "gadgets."+groupFor(ns))
	cleanupCRDs(t, ns)

	// A namespace that is terminating stays so: the test control plane runs
	// no namespace controller.
	doomed := ns + "-doomed"
	g := NewWithT(t)
	g.Expect(env.Client.Create(ctx, parse(t, ns, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+doomed+"}")[0])).To(Succeed())
	deleteLater(t, "v1", "Namespace", doomed)
	g.Expect(env.Client.Delete(ctx, parse(t, ns, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+doomed+"}")[0])).To(Succeed())

	tests := []struct {
		name      string
		manifests string
		wantErr   string
	}{
		{
			name: "CRD whose kind is taken",
			manifests: crdManifest + `
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.${GROUP}
spec:
  group: ${GROUP}
  scope: Namespaced
  names: {plural: gadgets, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
`,
			wantErr: "CustomResourceDefinition/gadgets." + groupFor(ns) + ": names not accepted",
		},
		{
			name:      "terminating namespace",
			manifests: "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + doomed + "}\n",
			wantErr:   "Namespace/" + doomed + ": the namespace is terminating",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			_, err := m.ApplyAllStaged(ctx, parse(t, ns, tt.manifests), ApplyOptions{WaitTimeout: 20 * time.Second})
			var aerr *ApplyError
			g.Expect(err).To(BeAssignableToTypeOf(aerr))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
			g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "fails fast, without waiting for the timeout")
		})
	}
}

// TestApplyAllStagedReadsOnlyWhatExists checks that a new object costs a
// dry run and an apply, no read, while an existing one is read to be
// compared, and that an object annotated in the cluster to be ignored stays
// ignored.
func TestApplyAllStagedReadsOnlyWhatExists(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	c := &countingClient{Client: env.Client}
	gets := &c.gets
	m, err := New(c, env.Client.RESTMapper(), Options{FieldManager: testFieldManager, Owner: Owner{Name: "app", Namespace: ns}})
	g.Expect(err).NotTo(HaveOccurred())
	objs := parse(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: ${NS}}
data: {v: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: ${NS}}
data: {v: "1"}
`)
	cs, err := m.ApplyAllStaged(ctx, objs, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.Summary()).To(Equal("ConfigMap/" + ns + "/a created\nConfigMap/" + ns + "/b created"))
	g.Expect(gets.Load()).To(BeZero(), "new objects are not read")

	cs, err = m.ApplyAllStaged(ctx, objs, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.Changed()).To(BeFalse())
	g.Expect(gets.Load()).To(BeEquivalentTo(2), "existing objects are read once each")

	live := get(t, "v1", "ConfigMap", ns, "b")
	live.SetAnnotations(map[string]string{SSAKey: string(PolicyIgnore)})
	g.Expect(env.Client.Update(ctx, live)).To(Succeed())
	changed := []*unstructured.Unstructured{objs[0].DeepCopy(), objs[1].DeepCopy()}
	for _, o := range changed {
		g.Expect(unstructured.SetNestedField(o.Object, "2", "data", "v")).To(Succeed())
	}
	cs, err = m.ApplyAllStaged(ctx, changed, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cs.Summary()).To(Equal("ConfigMap/" + ns + "/a configured"))
	g.Expect(get(t, "v1", "ConfigMap", ns, "b").Object["data"]).To(HaveKeyWithValue("v", "1"), "ignored in the cluster")
}

// countingClient counts the reads, applies and dry runs of a real client.
type countingClient struct {
	client.Client
	gets, applies, dryRuns atomic.Int64
}

func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	o := &client.ApplyOptions{}
	o.ApplyOptions(opts)
	if len(o.DryRun) > 0 {
		c.dryRuns.Add(1)
	} else {
		c.applies.Add(1)
	}
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Client.Get(ctx, key, obj, opts...)
}
