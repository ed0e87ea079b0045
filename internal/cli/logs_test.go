package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// logFixture is a log of the controllers, made by writeLogFixture.
var logFixture = filepath.Join("testdata", "logs", "controller.log")

// fixtureStart is the time of the fixture's first line.
var fixtureStart = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// tickingClock starts at fixtureStart and moves a second each time it is
// read, so that the fixture's lines have times of their own.
type tickingClock struct{ at time.Time }

func (c *tickingClock) Now() time.Time {
	c.at = c.at.Add(time.Second)
	return c.at
}

func (c *tickingClock) NewTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

// writeLogFixture writes log lines as the controllers write them: their zap
// logger (JSON, as `windlass controller --log-encoding json`), with the
// keys controller-runtime's builder adds (controller, controllerGroup,
// controllerKind, then per object the kind with name and namespace,
// namespace, name and reconcileID), at every level; and one line of the
// console encoding, which is not JSON. Stack traces are off: they would
// name this file's lines.
func writeLogFixture(w io.Writer) {
	clock := &tickingClock{at: fixtureStart}
	opts := []ctrlzap.Opts{ctrlzap.Level(zapcore.Level(-2)), ctrlzap.WriteTo(w),
		ctrlzap.StacktraceLevel(zapcore.PanicLevel), ctrlzap.RawZapOpts(uberzap.WithClock(clock))}
	log := ctrlzap.New(append(opts, ctrlzap.JSONEncoder())...)
	console := ctrlzap.New(append(opts, ctrlzap.ConsoleEncoder())...)
	controllerLog := func(name, group, kind string) logr.Logger {
		return log.WithValues("controller", name, "controllerGroup", group, "controllerKind", kind)
	}
	objectLog := func(l logr.Logger, kind, ns, name, id string) logr.Logger {
		return l.WithValues(kind, klog.KRef(ns, name), "namespace", ns, "name", name, "reconcileID", id)
	}
	git := controllerLog("gitrepository", "source.toolkit.fluxcd.io", "GitRepository")
	ks := controllerLog("kustomization", "kustomize.toolkit.fluxcd.io", "Kustomization")

	log.Info("Starting the manager", "controllers", []string{"source", "kustomize"})
	log.WithName("controller-runtime.metrics").Info("Serving metrics server", "bindAddress", ":8080", "secure", false)
	git.Info("Starting workers", "worker count", 4)
	console.Info("a line in the console encoding")
	objectLog(git, "GitRepository", "flux-system", "podinfo", "7f0c2a1e").V(1).Info("No changes since the last reconciliation",
		"revision", "main@sha1:0123456789abcdef")
	objectLog(git, "GitRepository", "flux-system", "infra", "1b2c3d4e").Info("Artifact missing, rebuilding",
		"path", "gitrepository/flux-system/infra/0123.tar.gz", "error", "open /data/0123.tar.gz: no such file or directory")
	podinfo := objectLog(ks, "Kustomization", "apps", "podinfo", "5e6f7a8b")
	podinfo.Error(errors.New("kustomize build failed: accumulating resources: 'deploy/missing.yaml' not found"),
		"Reconciliation failed, retrying after the retry interval")
	podinfo.V(2).Info("Dependency is not ready", "dependsOn", "flux-system/infra")
	objectLog(ks, "Kustomization", "flux-system", "infra", "9a8b7c6d").V(1).Info("Applied objects changed, applying again",
		"drift", "ConfigMap/demo/settings changed")
	objectLog(ks, "Kustomization", "flux-system", "infra", "9a8b7c6d").Info("a message\non two lines")
}

// TestLogsFixture: the fixture is what the controllers' logger writes
// today (rewritten with -update).
func TestLogsFixture(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	writeLogFixture(&buf)
	if *update {
		g.Expect(os.WriteFile(logFixture, buf.Bytes(), 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(logFixture)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(buf.String()).To(Equal(string(want)))
}

// TestLogFilters runs the filters over the fixture, line by line as the
// command does.
func TestLogFilters(t *testing.T) {
	all := logFilter{minLevel: minLevelAll}
	tests := []struct {
		name   string
		filter func(f *logFilter)
		want   []string
	}{
		{name: "no filter keeps every line, and the console line as it is", filter: func(*logFilter) {}, want: []string{
			"Starting the manager", "Serving metrics server", "Starting workers", "\tINFO\ta line in the console encoding",
			"No changes", "Artifact missing", "Reconciliation failed", "Dependency is not ready", "Applied objects changed", "a message"}},
		{name: "info and above", filter: func(f *logFilter) { f.minLevel = logLevels["info"] }, want: []string{
			"Starting the manager", "Serving metrics server", "Starting workers", "Artifact missing", "Reconciliation failed", "a message"}},
		{name: "debug and above", filter: func(f *logFilter) { f.minLevel = logLevels["debug"] }, want: []string{
			"Starting the manager", "Serving metrics server", "Starting workers", "No changes", "Artifact missing",
			"Reconciliation failed", "Applied objects changed", "a message"}},
		{name: "errors", filter: func(f *logFilter) { f.minLevel = logLevels["error"] }, want: []string{"Reconciliation failed"}},
		{name: "a kind", filter: func(f *logFilter) { f.kind = "GitRepository" }, want: []string{"Starting workers", "No changes", "Artifact missing"}},
		{name: "a name", filter: func(f *logFilter) { f.name = "infra" }, want: []string{"Artifact missing", "Applied objects changed", "a message"}},
		{name: "a kind and a name", filter: func(f *logFilter) { f.kind, f.name = "Kustomization", "infra" }, want: []string{
			"Applied objects changed", "a message"}},
		{name: "a namespace", filter: func(f *logFilter) { f.namespace = "apps" }, want: []string{"Reconciliation failed", "Dependency is not ready"}},
		{name: "since a time", filter: func(f *logFilter) { f.since = fixtureStart.Add(8 * time.Second) }, want: []string{
			"Dependency is not ready", "Applied objects changed", "a message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			file, err := os.Open(logFixture)
			g.Expect(err).NotTo(HaveOccurred())
			defer file.Close()
			var out bytes.Buffer
			p := &logPrinter{w: &out, filter: all}
			tt.filter(&p.filter)
			g.Expect(readLines(context.Background(), file, false, p.line, nil)).To(Succeed())
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			g.Expect(lines).To(HaveLen(len(tt.want)), out.String())
			for i, want := range tt.want {
				g.Expect(lines[i]).To(ContainSubstring(want))
			}
		})
	}
}

// TestLogFormat: a line of the controllers' own logger (newLogger, stack
// traces on) reads as one line, without its stack trace.
func TestLogFormat(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetErr(&buf)
	log, err := newLogger(cmd, "debug", "json")
	g.Expect(err).NotTo(HaveOccurred())
	log.WithValues("controllerKind", "Kustomization", "Kustomization", klog.KRef("apps", "web"), "namespace", "apps", "name", "web").
		Error(errors.New("health check failed"), "Reconciliation failed", "revision", "main@sha1:abc", "attempt", 2)
	g.Expect(buf.String()).To(ContainSubstring(`"stacktrace"`))
	var out bytes.Buffer
	g.Expect(readLines(context.Background(), &buf, false, (&logPrinter{w: &out}).line, nil)).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ERROR Kustomization apps/web: Reconciliation failed ` +
		`attempt=2 error="health check failed" revision=main@sha1:abc\n$`))
}

// TestLogsFromFile runs `windlass logs --from-file` over the fixture.
func TestLogsFromFile(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "everything", golden: "logs-all"},
		{name: "the Kustomizations, by alias", args: []string{"--kind", "ks"}, golden: "logs-kustomizations"},
		{name: "one object", args: []string{"--kind", "GitRepository", "--name", "infra"}, golden: "logs-gitrepository-infra"},
		{name: "the objects of a namespace, info and above", args: []string{"--namespace-of-object", "flux-system", "--level", "info"}, golden: "logs-flux-system-info"},
		{name: "errors", args: []string{"--level", "error"}, golden: "logs-errors"},
		{name: "the last lines", args: []string{"--tail", "3"}, golden: "logs-tail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, append([]string{"logs", "--from-file", logFixture}, tt.args...)...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, out)
		})
	}
	t.Run("the whole fixture is older than --since", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "logs", "--from-file", logFixture, "--since", "1h")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(BeEmpty())
	})
	t.Run("a path under ~", func(t *testing.T) {
		g := NewWithT(t)
		home := t.TempDir()
		fixture, err := os.ReadFile(logFixture)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(filepath.Join(home, "windlass.log"), fixture, 0o600)).To(Succeed())
		t.Setenv("HOME", home)
		out, _, err := run(t, "logs", "--from-file=~/windlass.log", "--level", "error")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(HaveSuffix("ERROR Kustomization apps/podinfo: Reconciliation failed, retrying after the retry interval " +
			`error="kustomize build failed: accumulating resources: 'deploy/missing.yaml' not found"` + "\n"))
	})
	t.Run("bad flags are one-line errors", func(t *testing.T) {
		for args, want := range map[string]string{
			"--kind Helm":         `--kind: unknown kind "Helm": use one of GitRepository`,
			"--level warn":        `invalid --level "warn": choose error, info, debug or trace`,
			"--tail -2":           "invalid --tail -2: give a number of lines, or -1 for all",
			"--since -1h":         "invalid --since -1h0m0s: give a positive duration, e.g. 1h",
			"--from-file missing": "reading the log: open missing: no such file or directory",
		} {
			g := NewWithT(t)
			_, _, err := run(t, append([]string{"logs", "--from-file", logFixture}, strings.Fields(args)...)...)
			g.Expect(err).To(MatchError(ContainSubstring(want)), args)
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		}
	})
}

// TestLogsFollowFile: -f prints the lines written to the file after it
// started, a line written in two parts once, and ends with its context.
func TestLogsFollowFile(t *testing.T) {
	g := NewWithT(t)
	fixture, err := os.ReadFile(logFixture)
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.SplitAfter(string(fixture), "\n")
	path := filepath.Join(t.TempDir(), "windlass.log")
	g.Expect(os.WriteFile(path, []byte(strings.Join(lines[:3], "")), 0o600)).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs([]string{"logs", "--from-file", path, "-f", "--tail", "1", "--kubeconfig", kubeconfig})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	g.Eventually(out.String).Should(ContainSubstring("Starting workers"))
	g.Expect(out.String()).NotTo(ContainSubstring("Serving metrics"), "--tail 1")

	file, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	g.Expect(err).NotTo(HaveOccurred())
	defer file.Close()
	failed := lines[6]
	_, err = file.WriteString(failed[:40])
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(3 * followPoll)
	_, err = file.WriteString(failed[40:])
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(out.String).Should(HaveSuffix("ERROR Kustomization apps/podinfo: Reconciliation failed, retrying after the retry interval " +
		`error="kustomize build failed: accumulating resources: 'deploy/missing.yaml' not found"` + "\n"))
	g.Expect(strings.Count(out.String(), "\n")).To(Equal(2), out.String())
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}

// TestLogsOfARealController: the lines a controller built by
// controller-runtime logs while reconciling are found by object.
func TestLogsOfARealController(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	var logs syncBuffer
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Logger: ctrlzap.New(ctrlzap.WriteTo(&logs), ctrlzap.JSONEncoder()),
		Cache:  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}})
	g.Expect(err).NotTo(HaveOccurred())
	err = ctrl.NewControllerManagedBy(mgr).For(&sourcev1.GitRepository{}).Named("logs-test").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(ctrlreconcile.Func(func(ctx context.Context, _ ctrlreconcile.Request) (ctrlreconcile.Result, error) {
			ctrl.LoggerFrom(ctx).Info("Reconciled for the logs test", "revision", "main@sha1:abc")
			return ctrlreconcile.Result{}, nil
		}))
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	g.Expect(env.Client.Create(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/web.git", Interval: metav1.Duration{Duration: time.Hour}}})).To(Succeed())

	filtered := func() string {
		var out bytes.Buffer
		p := &logPrinter{w: &out, filter: logFilter{kind: sourcev1.GitRepositoryKind, name: "web", namespace: ns, minLevel: 0}}
		g.Expect(readLines(ctx, strings.NewReader(logs.String()), false, p.line, nil)).To(Succeed())
		return out.String()
	}
	g.Eventually(filtered, 10*time.Second).Should(MatchRegexp(`(?m)^\S+ INFO  GitRepository ` + regexp.QuoteMeta(ns) +
		`/web: Reconciled for the logs test revision=main@sha1:abc$`))
	g.Expect(filtered()).NotTo(ContainSubstring(kustomizev1.KustomizationKind))
}

// TestLogsFromPods: with no controller pod in the namespace, the command
// says so; with one, it asks the API server for its logs (of which a pod
// that no kubelet runs has none).
func TestLogsFromPods(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	_, _, err := run(t, "logs", "-n", ns)
	g.Expect(err).To(MatchError("no Windlass controller pods in namespace " + ns + " (is Windlass installed? windlass check)"))

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "windlass-0",
		Labels: map[string]string{"app": "windlass", "app.kubernetes.io/part-of": "windlass"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "windlass"}}}}
	g.Expect(env.Client.Create(context.Background(), pod)).To(Succeed())
	out, errOut, err := run(t, "logs", "-n", ns, "--tail", "10", "--since", "1h")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(BeEmpty())
	g.Expect(errOut).To(Equal("pod " + ns + "/windlass-0 is not scheduled on a node yet: it has no logs\n"))
}

// TestMergeStreams: followed pods' logs are printed line by line as each
// stream brings them, until every stream ends.
func TestMergeStreams(t *testing.T) {
	g := NewWithT(t)
	fixture, err := os.ReadFile(logFixture)
	g.Expect(err).NotTo(HaveOccurred())
	lines := strings.SplitAfter(string(fixture), "\n")
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- mergeStreams(context.Background(), []io.ReadCloser{r1, r2}, &logPrinter{w: &out, filter: logFilter{minLevel: logLevels["info"]}})
	}()
	_, err = io.WriteString(w2, lines[5])
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(out.String).Should(ContainSubstring("GitRepository flux-system/infra: Artifact missing"))
	_, err = io.WriteString(w1, lines[4]+lines[6])
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(out.String).Should(ContainSubstring("Kustomization apps/podinfo: Reconciliation failed"))
	g.Expect(w1.Close()).To(Succeed())
	g.Consistently(done, 300*time.Millisecond).ShouldNot(Receive(), "one stream is still open")
	g.Expect(w2.Close()).To(Succeed())
	g.Eventually(done).Should(Receive(BeNil()))
	g.Expect(strings.Count(out.String(), "\n")).To(Equal(2), "the debug line is filtered out")
}
