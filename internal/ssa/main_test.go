package ssa

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the package's test control plane.
var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

// testFieldManager is the field manager the tests apply as.
const testFieldManager = "kustomize-controller"

// newManager returns a Manager owned by the Kustomization "app" in ns.
func newManager(t *testing.T, ns string) *Manager {
	t.Helper()
	m, err := New(env.Client, env.Client.RESTMapper(), Options{
		FieldManager: testFieldManager,
		Owner:        Owner{Name: "app", Namespace: ns},
		PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parse decodes a multi-document YAML stream after replacing ${NS} with ns
// and ${GROUP} with a CRD group unique to ns.
func parse(t *testing.T, ns, manifests string) []*unstructured.Unstructured {
	t.Helper()
	manifests = strings.NewReplacer("${NS}", ns, "${GROUP}", groupFor(ns)).Replace(manifests)
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(manifests, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("parsing %q: %v", doc, err)
		}
		objs = append(objs, u)
	}
	return objs
}

// groupFor returns a CRD group that belongs to one test.
func groupFor(ns string) string {
	return ns + ".windlass.test"
}

// get reads an object; it returns nil when there is none.
func get(t *testing.T, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading %s %s/%s: %v", kind, ns, name, err)
	}
	return u
}

// deleteLater deletes an object when the test ends; for cluster-scoped
// objects, which the test namespace does not hold.
func deleteLater(t *testing.T, apiVersion, kind, name string) {
	t.Cleanup(func() {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		_ = env.Client.Delete(context.Background(), u)
	})
}

// actions maps each subject of cs to its action.
func actions(cs *ChangeSet) map[string]Action {
	out := map[string]Action{}
	for _, c := range cs.Entries {
		out[c.Object.Subject()] = c.Action
	}
	return out
}

// crdManifest defines Widget (namespaced) and WidgetClass (cluster-scoped)
// in the test's group.
var crdManifest = testenv.WidgetCRD("${GROUP}") + `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgetclasses.${GROUP}
spec:
  group: ${GROUP}
  scope: Cluster
  names: {plural: widgetclasses, singular: widgetclass, kind: WidgetClass, listKind: WidgetClassList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// cleanupCRDs deletes the test's CRDs when it ends.
func cleanupCRDs(t *testing.T, ns string) {
	deleteLater(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets."+groupFor(ns))
	deleteLater(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgetclasses."+groupFor(ns))
}

// eventually is a gomega Eventually with the tests' timing.
func eventually(g Gomega, f any) AsyncAssertion {
	return g.Eventually(f).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond)
}
