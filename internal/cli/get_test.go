package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/manager"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
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

// startControllers runs the source, kustomize, helm, notification and
// image reflector controllers of the real manager against the test control
// plane, for the verbs that wait for them. The controllers see only the
// objects labelled for them (as a shard does), so that the objects of the
// get tests keep the status the tests give them.
func startControllers(ctx context.Context, e *testenv.Environment) error {
	opts, err := testmanager.Options(manager.SourceController, manager.KustomizeController, manager.HelmController,
		manager.NotificationController, manager.ImageReflectorController)
	if err != nil {
		return err
	}
	opts.WatchLabelSelector = controlledLabel + "=true"
	opts.Concurrent, opts.Helm.Concurrent, opts.MaxRetryDelay = 2, 2, time.Second
	receiverAddr = "http://" + opts.Notification.ReceiverAddr
	_, err = testmanager.Start(ctx, e.Config, opts)
	return err
}

// receiverAddr is the address of the webhook server of the tests'
// Receiver controller, http://127.0.0.1:port.
var receiverAddr string

// run runs the windlass command line with args against the test control
// plane, with the AGE clock ten hours ahead, and returns its output.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runWith(t, kubeconfig, args...)
}

// runWith runs the windlass command line with args against the cluster of
// the kubeconfig file config, as run does.
func runWith(t *testing.T, config string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	now = func() time.Time { return time.Now().Add(10 * time.Hour) }
	t.Cleanup(func() { now = time.Now })
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(append(args, "--kubeconfig", config))
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
	failed := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns1, Name: "db", Labels: map[string]string{"tier": "data"}},
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
		{name: "every source", args: []string{"get", "sources", "all", "-n", ns1}, golden: "get-sources-all"},
		{name: "only the failing ones", args: []string{"get", "all", "-n", ns1, "--status-selector", "ready=false"}, golden: "get-all-not-ready"},
		{name: "by label", args: []string{"get", "ks", "-n", ns1, "-l", "tier=data"}, golden: "get-kustomizations-by-label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, out)
		})
	}

	t.Run("one object", func(t *testing.T) {
		for _, tt := range []struct{ args, golden string }{
			{"get ks db", "get-kustomization-db"},
			{"get ks db -o wide", "get-kustomization-db-wide"},
			{"get kustomizations -o wide", "get-kustomizations-wide"},
			{"get sources git app", "get-source-git-app"},
		} {
			g := NewWithT(t)
			out, _, err := run(t, append(strings.Fields(tt.args), "-n", ns1)...)
			g.Expect(err).NotTo(HaveOccurred(), tt.args)
			expectGolden(t, g, tt.golden, out)
		}
	})
	t.Run("one object as YAML is the object, not a List", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "ks", "app", "-n", ns1, "-o", "yaml")
		g.Expect(err).NotTo(HaveOccurred())
		var ks kustomizev1.Kustomization
		g.Expect(yaml.UnmarshalStrict([]byte(out), &ks)).To(Succeed(), out)
		g.Expect(ks.Kind).To(Equal(kustomizev1.KustomizationKind))
		g.Expect(ks.Name).To(Equal("app"))
		g.Expect(out).NotTo(ContainSubstring("managedFields"))
	})
	t.Run("one object that is missing or not selected", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "get", "ks", "nope", "-n", ns1)
		g.Expect(err).To(MatchError("Kustomization " + ns1 + "/nope not found: check its name and -n"))
		_, _, err = run(t, "get", "ks", "app", "-n", ns1, "-l", "tier=data")
		g.Expect(err).To(MatchError("Kustomization " + ns1 + "/app does not match -l tier=data"))
	})
	t.Run("a group without a kind lists all its kinds", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "sources", "-n", ns1)
		g.Expect(err).NotTo(HaveOccurred())
		expectGolden(t, g, "get-sources-all", out)
	})
	t.Run("a misspelled kind gets a suggestion", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "get", "kustomizatons", "-n", ns1)
		g.Expect(err).To(MatchError(HavePrefix(`unknown kind "kustomizatons" for "windlass get" (did you mean kustomization?): choose one of`)))
		_, _, err = run(t, "get", "sources", "gitt", "-n", ns1)
		g.Expect(err).To(MatchError(HavePrefix(`unknown kind "gitt" for "windlass get sources" (did you mean git?)`)))
	})
	t.Run("as YAML, a List without managed fields", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "ks", "-n", ns1, "-o", "yaml")
		g.Expect(err).NotTo(HaveOccurred())
		var list struct {
			APIVersion, Kind string
			Items            []kustomizev1.Kustomization
		}
		g.Expect(yaml.UnmarshalStrict([]byte(out), &list)).To(Succeed(), out)
		g.Expect(list.Kind).To(Equal("List"))
		g.Expect(list.Items).To(HaveLen(2))
		g.Expect(list.Items[0].APIVersion).To(Equal(kustomizev1.GroupVersion.String()))
		g.Expect(list.Items[0].Kind).To(Equal(kustomizev1.KustomizationKind))
		g.Expect(list.Items[0].Name).To(Equal("app"))
		g.Expect(list.Items[0].Status.LastAppliedRevision).To(Equal("main@sha1:0123456789abcdef"))
		g.Expect(list.Items[1].ManagedFields).To(BeEmpty())
		g.Expect(out).NotTo(ContainSubstring("managedFields"))
	})
	t.Run("as JSON", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "get", "sources", "git", "-n", ns1, "-o", "json", "--status-selector", "ready=true")
		g.Expect(err).NotTo(HaveOccurred())
		var list struct{ Items []sourcev1.GitRepository }
		g.Expect(json.Unmarshal([]byte(out), &list)).To(Succeed(), out)
		g.Expect(list.Items).To(HaveLen(1))
		g.Expect(list.Items[0].Spec.URL).To(Equal("https://example.com/app.git"))
	})
	t.Run("bad flags are one-line errors", func(t *testing.T) {
		for args, want := range map[string]string{
			"-o yml":                  `invalid --output "yml": choose table, wide, yaml or json`,
			"--status-selector ready": `invalid --status-selector "ready": write CONDITION=STATUS, e.g. ready=false`,
			"-l a=b=c":                `invalid --label-selector "a=b=c"`,
			"--watch -o yaml":         "--watch prints table rows: leave -o yaml out",
		} {
			g := NewWithT(t)
			_, _, err := run(t, append([]string{"get", "ks", "-n", ns1}, strings.Fields(args)...)...)
			g.Expect(err).To(MatchError(ContainSubstring(want)), args)
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		}
	})
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

// TestGetWatch: --watch prints the table, then a row for each change, and
// ends without an error when its context does.
func TestGetWatch(t *testing.T) {
	g := NewWithT(t)
	ns1, _ := seedObjects(t, g)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs([]string{"get", "ks", "-n", ns1, "--watch", "--kubeconfig", kubeconfig})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	g.Eventually(out.String).Should(HavePrefix("NAME"))
	g.Consistently(out.String, time.Second).Should(HaveLen(len(out.String())), "nothing printed twice while nothing changes")

	var ks kustomizev1.Kustomization
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns1, Name: "db"}, &ks)).To(Succeed())
	conditions.MarkTrue(&ks, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "Applied revision: main@sha1:fedcba")
	ks.Status.LastAppliedRevision = "main@sha1:fedcba"
	g.Expect(env.Client.Status().Update(ctx, &ks)).To(Succeed())
	g.Eventually(out.String).Should(MatchRegexp(`\ndb\s+main@sha1:fedcba\s+false\s+True\s+Applied revision: main@sha1:fedcba`))

	g.Expect(env.Client.Delete(ctx, &ks)).To(Succeed())
	g.Eventually(out.String).Should(MatchRegexp(`\ndb\s+main@sha1:fedcba\s+false\s+Deleted`))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
