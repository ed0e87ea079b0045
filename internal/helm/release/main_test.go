package release

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/helm/sandbox"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the package's control plane (a real kube-apiserver and etcd; no
// kubelet and no kube-controller-manager, so Pods never run and
// Deployments get no status).
var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}

var (
	sharedGetterOnce sync.Once
	sharedGetter     *Getter

	sharedSandboxOnce sync.Once
	sharedSandbox     *sandbox.Renderer
)

// testSandbox returns the chart sandbox that every test's runner renders
// in, as the controller's do.
func testSandbox(t *testing.T) *sandbox.Renderer {
	t.Helper()
	sharedSandboxOnce.Do(func() {
		sharedSandbox = sandbox.New(sandbox.Limits{}, nil)
	})
	if sharedSandbox == nil {
		t.Fatal("no shared sandbox")
	}
	return sharedSandbox
}

// getter returns the Getter that every test shares, as the controller
// shares one per cluster.
func getter(t *testing.T) *Getter {
	t.Helper()
	sharedGetterOnce.Do(func() {
		g, err := NewGetter(env.Config)
		if err != nil {
			t.Fatalf("NewGetter: %v", err)
		}
		sharedGetter = g
	})
	if sharedGetter == nil {
		t.Fatal("no shared getter")
	}
	return sharedGetter
}

// fixture is one test's runner with its own storage and target namespaces.
type fixture struct {
	runner  *Runner
	storage string
	target  string
}

// newFixture creates a storage and a target namespace and a Runner storing
// its releases in the former and rendering in the shared sandbox, with
// opts.
func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{storage: env.CreateNamespace(t), target: env.CreateNamespace(t)}
	r, err := New(getter(t), f.storage, append([]Option{WithSandbox(testSandbox(t))}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.runner = r
	return f
}

// install installs ch as name with values and fails the test on error.
func (f *fixture) install(t *testing.T, name string, ch *chart.Chart, values map[string]any) *releasev1.Release {
	t.Helper()
	rel, err := f.runner.Install(context.Background(), ch, values, InstallOptions{
		ReleaseName: name, Namespace: f.target, ServerSideApply: true,
	})
	if err != nil {
		t.Fatalf("installing %s: %v", name, err)
	}
	return rel
}

// upgrade upgrades name to ch with values and fails the test on error.
func (f *fixture) upgrade(t *testing.T, name string, ch *chart.Chart, values map[string]any) *releasev1.Release {
	t.Helper()
	rel, err := f.runner.Upgrade(context.Background(), ch, values, UpgradeOptions{ReleaseName: name})
	if err != nil {
		t.Fatalf("upgrading %s: %v", name, err)
	}
	return rel
}

// greeting returns data.greeting of the ConfigMap name in the target
// namespace, or "" when it does not exist.
func (f *fixture) greeting(name string) string {
	cm := &corev1.ConfigMap{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: name}, cm)
	if err != nil {
		return ""
	}
	return cm.Data["greeting"]
}

// secretNames lists the Secrets of namespace.
func secretNames(t *testing.T, namespace string) []string {
	t.Helper()
	g := NewWithT(t)
	list := &corev1.SecretList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

// basicChart is the default test chart: one ConfigMap "<release>-cm" with
// data.greeting from .Values.greeting.
func basicChart(t *testing.T, version string, opts ...helmtest.ChartOption) *chart.Chart {
	t.Helper()
	return helmtest.Chart(t, "basic", version, opts...)
}

// versions returns the versions and statuses of rels, as "v1=deployed".
func versions(rels []*releasev1.Release) []string {
	out := make([]string, 0, len(rels))
	for _, r := range rels {
		out = append(out, "v"+strconv.Itoa(r.Version)+"="+r.Info.Status.String())
	}
	return out
}
