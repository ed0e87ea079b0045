package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/controller/kustomize"
	"github.com/windlass-dev/windlass/internal/controller/source"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files of the CLI's output")

var (
	env        *testenv.Environment
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, func(_ context.Context, e *testenv.Environment) error {
		dir, err := os.MkdirTemp("", "windlass-cli-")
		if err != nil {
			return err
		}
		kubeconfig, err = e.KubeconfigFile(dir)
		return err
	}, startControllers))
}

// controlledLabel marks the objects that the tests' controllers reconcile.
const controlledLabel = "windlass.test/controlled"

// startControllers runs the GitRepository and Kustomization controllers
// against the test control plane, for the verbs that wait for them.
func startControllers(ctx context.Context, e *testenv.Environment) error {
	storage, err := testutil.StartStorage()
	if err != nil {
		return err
	}
	// The controllers see only the objects labelled for them, so that the
	// objects of the get tests keep the status the tests give them.
	selector := labels.SelectorFromSet(labels.Set{controlledLabel: "true"})
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&sourcev1.GitRepository{}: {Label: selector}, &kustomizev1.Kustomization{}: {Label: selector},
		}}})
	if err != nil {
		return err
	}
	opts := reconcile.ControllerOptions{MaxConcurrentReconciles: 2,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](100*time.Millisecond, time.Second)}
	git := &source.GitRepositoryReconciler{Client: mgr.GetClient(), Storage: storage, DependencyRequeue: time.Second, AllowInsecureHTTP: true}
	if err := git.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	ks := &kustomize.KustomizationReconciler{
		Client: mgr.GetClient(), Fetcher: &fetch.Local{Storage: storage}, DependencyRequeue: time.Second,
		Applier: &impersonation.Factory{Config: mgr.GetConfig(), HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()},
	}
	if err := ks.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// run runs the windlass command line with args against the test control
// plane, with the AGE clock ten hours ahead, and returns its output.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	now = func() time.Time { return time.Now().Add(10 * time.Hour) }
	t.Cleanup(func() { now = time.Now })
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// expectGolden compares got with testdata/name.golden, or rewrites it with
// -update.
func expectGolden(t *testing.T, g *WithT, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		g.Expect(os.WriteFile(path, []byte(got), 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred(), "run the test with -update to write %s", path)
	g.Expect(got).To(Equal(string(want)))
}

// createWithStatus creates obj and then writes its status, as the
// controller would.
func createWithStatus(g *WithT, obj client.Object, status func()) {
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	status()
	g.Expect(env.Client.Status().Update(ctx, obj)).To(Succeed())
}

// seedObjects creates, in two new namespaces, a Ready GitRepository, a
// suspended one with no artifact yet, a Ready Kustomization and one whose
// last run failed.
func seedObjects(t *testing.T, g *WithT) (ns1, ns2 string) {
	ns1, ns2 = env.CreateNamespace(t), env.CreateNamespace(t)
	interval := metav1.Duration{Duration: time.Minute}
	ready := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "app"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: interval}}
	createWithStatus(g, ready, func() {
		ready.Status.Artifact = &meta.Artifact{Revision: "main@sha1:0123456789abcdef", Path: "p", URL: "http://x/p", Digest: "sha256:0", LastUpdateTime: metav1.Now()}
		conditions.MarkTrue(ready, meta.ReadyCondition, meta.SucceededReason, "stored artifact for revision 'main@sha1:0123456789abcdef'")
	})
	suspended := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "infra"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/infra.git", Interval: interval, Suspend: true}}
	g.Expect(env.Client.Create(context.Background(), suspended)).To(Succeed())
	applied := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "app"},
		Spec: kustomizev1.KustomizationSpec{Interval: interval, SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app"}}}
	createWithStatus(g, applied, func() {
		applied.Status.LastAppliedRevision = "main@sha1:0123456789abcdef"
		conditions.MarkTrue(applied, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "Applied revision: main@sha1:0123456789abcdef")
	})
	failed := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "db"},
		Spec: kustomizev1.KustomizationSpec{Interval: interval, SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "app"}}}
	createWithStatus(g, failed, func() {
		conditions.MarkFalse(failed, meta.ReadyCondition, kustomizev1.BuildFailedReason, "kustomize build failed: missing resource\nsecond line")
	})
	return ns1, ns2
}

func TestGet(t *testing.T) {
	g := NewWithT(t)
	ns1, ns2 := seedObjects(t, g)
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "git sources of a namespace", args: []string{"get", "sources", "git", "-n", ns1}, golden: "get-sources-git"},
		{name: "kustomizations", args: []string{"get", "ks", "-n", ns1}, golden: "get-kustomizations"},
		{name: "kustomizations without a header", args: []string{"get", "kustomizations", "-n", ns1, "--no-header"}, golden: "get-kustomizations-no-header"},
		{name: "all of a namespace", args: []string{"get", "all", "-n", ns1}, golden: "get-all"},
		{name: "a suspended source without an artifact", args: []string{"get", "sources", "git", "-n", ns2}, golden: "get-sources-git-suspended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, out)
		})
	}

	t.Run("every namespace", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "all", "-A")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HavePrefix("KIND"))
		g.Expect(out).To(ContainSubstring(ns1))
		g.Expect(out).To(ContainSubstring(ns2))
	})
	t.Run("an empty namespace says so", func(t *testing.T) {
		g := NewWithT(t)
		out, errOut, err := run(t, "get", "ks", "-n", env.CreateNamespace(t))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
		g.Expect(errOut).To(HavePrefix("no objects found in namespace"))
	})
	t.Run("an unreachable cluster is a one-line error", func(t *testing.T) {
		g := NewWithT(t)
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetArgs([]string{"get", "ks", "--kubeconfig", filepath.Join(t.TempDir(), "missing")})
		err := root.Execute()
		g.Expect(err).To(MatchError(ContainSubstring("no cluster to talk to")))
	})
}
