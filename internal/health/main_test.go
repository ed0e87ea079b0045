package health

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the control plane of the package's tests, with
// kube-controller-manager running.
var env *testenv.Environment

// mapper is a lazy discovery RESTMapper for env.
var mapper meta.RESTMapper

// controllerManagerStartup is how long kube-controller-manager took to act.
var controllerManagerStartup time.Duration

// The test CRD: Widgets in two versions of one group, with a status
// subresource and no schema to speak of.
const (
	widgetGroup = "test.windlass.dev"
	widgetKind  = "Widget"
	widgetV1    = widgetGroup + "/v1"
	widgetV2    = widgetGroup + "/v2"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, setup))
}

func setup(ctx context.Context, e *testenv.Environment) error {
	start := time.Now()
	if err := e.StartControllerManager(ctx); err != nil {
		return err
	}
	controllerManagerStartup = time.Since(start)
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()},
	}); err != nil {
		return fmt.Errorf("installing the Widget CRD: %w", err)
	}
	hc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return err
	}
	mapper, err = apiutil.NewDynamicRESTMapper(e.Config, hc)
	return err
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec":   {Type: "object", XPreserveUnknownFields: ptr.To(true)},
				"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
			},
		},
	}
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{
			Name: name, Served: true, Storage: storage, Schema: schema,
			Subresources: &apiextensionsv1.CustomResourceSubresources{
				Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
			},
		}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + widgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: widgetKind, ListKind: widgetKind + "List", Plural: "widgets", Singular: "widget",
			},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true), version("v2", false)},
		},
	}
}

// newChecker returns a Checker on the control plane that polls often.
func newChecker() *Checker {
	return NewChecker(env.Client, mapper)
}

// createWidget creates a Widget and, when status is not nil, sets its
// status through the status subresource.
func createWidget(t *testing.T, apiVersion, ns, name string, status map[string]any) ObjectRef {
	t.Helper()
	g := NewWithT(t)
	u := newWidget(apiVersion, ns, name)
	g.Expect(env.Client.Create(context.Background(), u)).To(Succeed())
	if status != nil {
		setWidgetStatus(t, u, status)
	}
	return ObjectRef{APIVersion: apiVersion, Kind: widgetKind, Namespace: ns, Name: name}
}

// newWidget returns a Widget to create.
func newWidget(apiVersion, ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       widgetKind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"size": int64(1)},
	}}
}

// setWidgetStatus replaces a Widget's status.
func setWidgetStatus(t *testing.T, u *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(unstructured.SetNestedField(u.Object, status, "status")).To(Succeed())
	g.Expect(env.Client.Status().Update(context.Background(), u)).To(Succeed())
}

// stalled is a kstatus status whose Stalled condition is true.
func stalled(message string) map[string]any {
	return map[string]any{"conditions": []any{map[string]any{
		"type": "Stalled", "status": "True", "reason": "Broken", "message": message,
		"lastTransitionTime": "2024-01-01T00:00:00Z",
	}}}
}

// createDeployment creates a Deployment with the given replicas whose
// pods can never run (there is no kubelet).
func createDeployment(t *testing.T, ns, name string, replicas int32) ObjectRef {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.invalid/never:1",
				}}},
			},
		},
	}
	NewWithT(t).Expect(env.Client.Create(context.Background(), d)).To(Succeed())
	return ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
}

// deploymentRef names a Deployment.
func deploymentRef(ns, name string) ObjectRef {
	return ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}
}

// getDeployment reads a Deployment.
func getDeployment(g Gomega, ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	return d
}
