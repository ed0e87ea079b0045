package drift

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/helm/postrender"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the package's test control plane.
var env *testenv.Environment

// kubeconfig is a kubeconfig file for env, for the Helm SDK.
var kubeconfig string

// helmFieldManager is the field manager of Helm's applies in the tests, and
// of the Manager that detects and corrects drift, as the package
// documentation asks.
const helmFieldManager = "helm-controller"

func TestMain(m *testing.M) {
	kube.ManagedFieldsManager = helmFieldManager
	dir, err := os.MkdirTemp("", "drift-kubeconfig-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.Run(m, &env, func(_ context.Context, e *testenv.Environment) error {
		kubeconfig, err = e.KubeconfigFile(dir)
		return err
	})
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// The chart's templates: a ConfigMap, a Deployment and a Service, which
// the API server defaults and allocates fields of, and a ConfigMap that
// opts out of drift detection.
const (
	configMapTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ .Values.greeting | quote }}
  color: blue
`
	deploymentTemplate = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 2
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
        image: registry.example.com/web:v1
`
	serviceTemplate = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 8080
`
	freeTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-free
  annotations:
    helm.toolkit.fluxcd.io/driftDetection: disabled
data:
  key: value
`
)

// installed is a release installed by the Helm SDK in a namespace of its
// own.
type installed struct {
	ns   string
	hr   *helmv2.HelmRelease
	objs []*unstructured.Unstructured
}

// install installs the test chart as the release "rel" of a HelmRelease
// "app", in a new namespace, with the Helm SDK's install action (server-side
// apply, Secrets storage) and the helm post-renderer, and returns the
// objects of the stored release manifest.
func install(t *testing.T) *installed {
	t.Helper()
	ns := env.CreateNamespace(t)
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}
	ch := helmtest.Chart(t, "drift", "1.0.0",
		helmtest.WithTemplate(helmtest.DefaultTemplateName, configMapTemplate),
		helmtest.WithTemplate("deployment.yaml", deploymentTemplate),
		helmtest.WithTemplate("service.yaml", serviceTemplate),
		helmtest.WithTemplate("free.yaml", freeTemplate))
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		t.Fatalf("initialising Helm: %v", err)
	}
	pr, err := postrender.New(hr)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.PostRenderer = "rel", ns, pr
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, time.Minute
	out, err := in.RunWithContext(context.Background(), ch, map[string]any{"greeting": "hello"})
	if err != nil {
		t.Fatalf("installing the chart: %v", err)
	}
	rel := out.(*release.Release)
	objs := manifestObjects(t, rel.Manifest, ns)
	SetReleaseMetadata(objs, rel.Name, rel.Namespace)
	return &installed{ns: ns, hr: hr, objs: objs}
}

// manifestObjects decodes a release manifest, setting the release's
// namespace on every object (all the chart's kinds are namespaced).
func manifestObjects(t *testing.T, manifest, ns string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(manifest, "\n---") {
		data, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("decoding the manifest: %v", err)
		}
		if string(data) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatalf("decoding the manifest: %v", err)
		}
		u.SetNamespace(ns)
		objs = append(objs, u)
	}
	if len(objs) != 4 {
		t.Fatalf("the manifest holds %d objects, want 4", len(objs))
	}
	return objs
}

// manager returns a Manager with the given field manager, owned as the
// controller owns the release's objects.
func (r *installed) manager(t *testing.T, fieldManager string) *ssa.Manager {
	t.Helper()
	m, err := ssa.New(env.Client, env.Client.RESTMapper(), ssa.Options{
		FieldManager: fieldManager, Owner: Owner(r.hr), PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// get reads an object of the release; nil when there is none.
func (r *installed) get(t *testing.T, apiVersion, kind, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading %s %s: %v", kind, name, err)
	}
	return u
}

// edit changes an object of the release as kubectl edit does: an Update by
// another field manager.
func (r *installed) edit(t *testing.T, apiVersion, kind, name string, change func(u *unstructured.Unstructured)) {
	t.Helper()
	u := r.get(t, apiVersion, kind, name)
	if u == nil {
		t.Fatalf("%s %s does not exist", kind, name)
	}
	change(u)
	if err := env.Client.Update(context.Background(), u, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatalf("editing %s %s: %v", kind, name, err)
	}
}

// remove deletes an object of the release.
func (r *installed) remove(t *testing.T, apiVersion, kind, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(r.ns)
	u.SetName(name)
	if err := env.Client.Delete(context.Background(), u); err != nil {
		t.Fatalf("deleting %s %s: %v", kind, name, err)
	}
}
