// Package testenv starts the test control plane for a package's tests: a
// real etcd and kube-apiserver (and, when asked, kube-controller-manager)
// built from Go modules by internal/controlplane, with the Windlass CRDs
// installed. One control plane serves a whole package; each test works in a
// namespace of its own.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/windlass-dev/windlass/internal/controlplane"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// Environment is a running test control plane.
type Environment struct {
	env *envtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Scheme knows the built-in and the Windlass types.
	Scheme *k8sruntime.Scheme
	// Client is a direct (uncached) client.
	Client client.Client
}

// controlPlaneDeadline bounds each start and stop of a control plane
// component, and the wait for the CRDs to be served.
const controlPlaneDeadline = 2 * time.Minute

// Option changes the control plane that Start starts.
type Option func(*envtest.Environment)

// WithAPIServerFlag sets a flag of kube-apiserver (without its dashes).
func WithAPIServerFlag(name, value string) Option {
	return func(env *envtest.Environment) { env.ControlPlane.GetAPIServer().Configure().Set(name, value) }
}

// Start starts a control plane with the Windlass CRDs installed.
func Start(opts ...Option) (*Environment, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	s := scheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		// Deadlines, not delays: a control plane that starts while the
		// machine runs a second test suite beside this one (as CI does)
		// can take far longer than envtest's 20s, and each retry starts
		// from scratch.
		ControlPlaneStartTimeout: controlPlaneDeadline,
		ControlPlaneStopTimeout:  controlPlaneDeadline,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: controlPlaneDeadline},
	}
	env.ControlPlane.GetAPIServer().Configure().
		Set("service-cluster-ip-range", "10.96.0.0/12").
		// End the clients' watches when the API server stops, rather than
		// wait up to a minute for them (see StopAPIServer).
		Set("shutdown-watch-termination-grace-period", "2s")
	for _, opt := range opts {
		opt(env)
	}
	cfg, err := env.Start()
	if err != nil {
		// A control plane that started but could not install the CRDs
		// must not outlive the test.
		_ = env.Stop()
		return nil, fmt.Errorf("starting the test control plane from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Environment{env: env, Config: cfg, Scheme: s, Client: c}, nil
}

// Stop stops the control plane.
func (e *Environment) Stop() error {
	return e.env.Stop()
}

// Run is a TestMain body: it starts a control plane, stores it in *env, runs
// the setup functions (to start controllers, for instance) with a context
// that ends after the tests, runs the package's tests and stops everything.
func Run(m *testing.M, env **Environment, setup ...func(context.Context, *Environment) error) int {
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	ctx, cancel := context.WithCancel(context.Background())
	code := 1
	defer func() {
		cancel()
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test control plane:", err)
		}
	}()
	for _, f := range setup {
		if err := f(ctx, e); err != nil {
			fmt.Fprintln(os.Stderr, "setting up the tests:", err)
			return code
		}
	}
	code = m.Run()
	return code
}

// CreateNamespace creates a namespace with a generated name for one test and
// deletes it when the test ends.
func (e *Environment) CreateNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), ns)
	})
	return ns.Name
}

// AssetsDir returns the folder of the control-plane binaries (see
// controlplane.AssetsDir: $KUBEBUILDER_ASSETS, else the cache folder that
// `make controlplane` builds into), and fails when they are not built.
func AssetsDir() (string, error) {
	dir, err := controlplane.AssetsDir()
	if err != nil {
		return "", err
	}
	if missing := controlplane.Missing(dir); len(missing) > 0 {
		return "", fmt.Errorf("the test control plane is not built in %s (%s missing): run 'make controlplane' first", dir, missing[0].Name)
	}
	return dir, nil
}

// RepoRoot returns the root of the Windlass checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// KubeconfigFile issues an administrator (a member of system:masters) for
// the control plane and writes a kubeconfig for it to a file in dir, for
// programs that run outside the test process, such as the windlass binary
// in end-to-end tests. It returns the file's path.
func (e *Environment) KubeconfigFile(dir string) (string, error) {
	return e.writeKubeconfig(dir, "e2e-admin")
}

// KubeconfigFileOf writes to dir/kubeconfig the kubeconfig of userName, a
// new administrator (group system:masters): for tests that tell apart the
// requests of several processes by their user.
func (e *Environment) KubeconfigFileOf(dir, userName string) (string, error) {
	return e.writeKubeconfig(dir, userName)
}

// writeKubeconfig issues the system:masters user userName and writes its
// kubeconfig to dir/kubeconfig.
func (e *Environment) writeKubeconfig(dir, userName string) (string, error) {
	user, err := e.env.AddUser(envtest.User{Name: userName, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding the %s user: %w", userName, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering the kubeconfig of %s: %w", userName, err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", userName, err)
	}
	return path, nil
}
