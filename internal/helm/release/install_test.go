package release

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestInstall(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	values := map[string]any{"greeting": "hi"}

	rel, err := f.runner.Install(context.Background(), basicChart(t, "1.0.0"), values, InstallOptions{
		ReleaseName:     "app",
		Namespace:       f.target,
		ServerSideApply: true,
		Labels:          map[string]string{"team": "blue"},
		Description:     "installed by the test",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(1))
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
	g.Expect(rel.Info.Description).To(Equal("installed by the test"))
	g.Expect(rel.Namespace).To(Equal(f.target))
	g.Expect(f.greeting("app-cm")).To(Equal("hi"))

	// Stored in the storage namespace, in the helm CLI's format.
	g.Expect(secretNames(t, f.storage)).To(ContainElement("sh.helm.release.v1.app.v1"))
	g.Expect(secretNames(t, f.target)).NotTo(ContainElement(HavePrefix("sh.helm.release")))
	stored := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.storage, Name: "sh.helm.release.v1.app.v1"}, stored)).To(Succeed())
	g.Expect(stored.Type).To(Equal(corev1.SecretType("helm.sh/release.v1")))
	g.Expect(stored.Labels).To(HaveKeyWithValue("owner", "helm"))
	g.Expect(stored.Labels).To(HaveKeyWithValue("status", "deployed"))
	g.Expect(stored.Labels).To(HaveKeyWithValue("team", "blue"))

	last, err := f.runner.Last("app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Version).To(Equal(1))
	g.Expect(last.Manifest).To(Equal(rel.Manifest))
	g.Expect(last.Labels).To(HaveKeyWithValue("team", "blue"))

	snap := Snapshot(last)
	g.Expect(snap.Status).To(Equal("deployed"))
	g.Expect(snap.Action).To(Equal(ActionInstall))
	g.Expect(snap.ChartName).To(Equal("basic"))
	g.Expect(snap.ChartVersion).To(Equal("1.0.0"))
	g.Expect(snap.ConfigDigest).To(Equal(ConfigDigest(values)))
}

// TestInstallOfANameReadAbsent: an install whose caller just read that
// the name has no release lists the storage no more; a record stored
// meanwhile by another tool still stops it, before anything is applied.
func TestInstallOfANameReadAbsent(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ctx := context.Background()
	last, _, err := f.runner.RecoverPending(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last).To(BeNil())
	opts := InstallOptions{ReleaseName: "app", Namespace: f.target, ServerSideApply: true, Absent: true}
	rel, err := f.runner.Install(ctx, basicChart(t, "1.0.0"), map[string]any{"greeting": "hi"}, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(1))
	g.Expect(f.greeting("app-cm")).To(Equal("hi"))

	// Read absent, but stored since: the first record cannot be stored.
	_, err = f.runner.Install(ctx, basicChart(t, "1.0.0"), map[string]any{"greeting": "again"}, opts)
	g.Expect(err).To(MatchError(ContainSubstring("already exists")))
	g.Expect(f.greeting("app-cm")).To(Equal("hi"), "nothing applied")
}

// TestAbsentOnceAnswersTheFirstHistoryQuery: the name's first history
// query is answered with none without asking the storage; later ones,
// and other queries, are the storage's.
func TestAbsentOnceAnswersTheFirstHistoryQuery(t *testing.T) {
	g := NewWithT(t)
	mem := driver.NewMemory()
	rel := &releasev1.Release{Name: "app", Namespace: "ns", Version: 1, Info: &releasev1.Info{Status: rcommon.StatusDeployed}}
	g.Expect(mem.Create("sh.helm.release.v1.app.v1", rel)).To(Succeed())
	d := &absentOnce{Driver: mem, name: "app"}
	history := map[string]string{"name": "app", "owner": "helm"}

	_, err := d.Query(history)
	g.Expect(err).To(MatchError(driver.ErrReleaseNotFound), "answered without the storage")
	found, err := d.Query(history)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(HaveLen(1), "the second is the storage's")
	found, err = (&absentOnce{Driver: mem, name: "other"}).Query(history)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(HaveLen(1), "another name's query is the storage's")
}

func TestInstallOptions(t *testing.T) {
	schema := `{"type":"object","properties":{"greeting":{"type":"string","maxLength":5}}}`
	tests := []struct {
		name      string
		chartOpts []helmtest.ChartOption
		values    map[string]any
		opts      func(f *fixture, o *InstallOptions)
		setup     func(t *testing.T, f *fixture)
		wantErr   string
		check     func(g *WithT, f *fixture)
	}{
		{
			name:      "values that break values.schema.json are refused",
			chartOpts: []helmtest.ChartOption{helmtest.WithSchema(schema)},
			values:    map[string]any{"greeting": "far too long"},
			wantErr:   "maxLength",
		},
		{
			name:      "DisableSchemaValidation skips values.schema.json",
			chartOpts: []helmtest.ChartOption{helmtest.WithSchema(schema)},
			values:    map[string]any{"greeting": "far too long"},
			opts:      func(_ *fixture, o *InstallOptions) { o.DisableSchemaValidation = true },
			check: func(g *WithT, f *fixture) {
				g.Expect(f.greeting("app-cm")).To(Equal("far too long"))
			},
		},
		{
			name: "CreateNamespace creates the target namespace",
			opts: func(f *fixture, o *InstallOptions) {
				o.Namespace = f.target + "-new"
				o.CreateNamespace = true
			},
			check: func(g *WithT, f *fixture) {
				ns := &corev1.Namespace{}
				g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: f.target + "-new"}, ns)).To(Succeed())
				_ = env.Client.Delete(context.Background(), ns)
			},
		},
		{
			name:    "an object that exists and belongs to no release is a conflict",
			setup:   createConfigMap("app-cm"),
			wantErr: "exists and cannot be imported",
		},
		{
			name:  "TakeOwnership adopts an object that belongs to no release",
			setup: createConfigMap("app-cm"),
			opts:  func(_ *fixture, o *InstallOptions) { o.TakeOwnership = true },
			check: func(g *WithT, f *fixture) {
				cm := &corev1.ConfigMap{}
				g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: "app-cm"}, cm)).To(Succeed())
				g.Expect(cm.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", "app"))
				g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
			},
		},
		{
			name: "a name in use is refused",
			setup: func(t *testing.T, f *fixture) {
				f.install(t, "app", basicChart(t, "1.0.0"), nil)
			},
			wantErr: "cannot reuse a name that is still in use",
		},
		{
			name:    "an unknown CRDs policy is refused",
			opts:    func(_ *fixture, o *InstallOptions) { o.CRDs = "Sometimes" },
			wantErr: `unknown CRDs policy "Sometimes"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(t, f)
			}
			opts := InstallOptions{ReleaseName: "app", Namespace: f.target, ServerSideApply: true}
			if tt.opts != nil {
				tt.opts(f, &opts)
			}
			_, err := f.runner.Install(context.Background(), basicChart(t, "1.0.0", tt.chartOpts...), tt.values, opts)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, f)
		})
	}
}

// createConfigMap returns a setup that creates a ConfigMap in the target
// namespace, outside any release.
func createConfigMap(name string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.target, Name: name}}
		if err := env.Client.Create(context.Background(), cm); err != nil {
			t.Fatalf("creating ConfigMap %s: %v", name, err)
		}
	}
}

// neverReady is a chart whose Deployment never becomes ready: nothing here
// runs kube-controller-manager, so the Deployment gets no status.
func neverReady(t *testing.T) []helmtest.ChartOption {
	t.Helper()
	return []helmtest.ChartOption{helmtest.WithTemplate("deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
`)}
}

func TestInstallWaitEnds(t *testing.T) {
	tests := []struct {
		name     string
		strategy kube.WaitStrategy
		timeout  time.Duration
		// cancelWaiting ends the context once the install waits (its
		// release is stored, pending).
		cancelWaiting bool
		wantUnder     time.Duration
	}{
		{name: "at the timeout (kstatus)", timeout: 2 * time.Second, wantUnder: 20 * time.Second},
		{name: "at the timeout (legacy)", strategy: kube.LegacyStrategy, timeout: 2 * time.Second, wantUnder: 20 * time.Second},
		{name: "when the context ends", timeout: 10 * time.Minute, cancelWaiting: true, wantUnder: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelWaiting {
				go cancelOnceWaiting(ctx, f, "app", cancel)
			}
			start := time.Now()
			rel, err := f.runner.Install(ctx, basicChart(t, "1.0.0", neverReady(t)...), nil, InstallOptions{
				ReleaseName: "app", Namespace: f.target, ServerSideApply: true,
				Wait: true, WaitStrategy: tt.strategy, Timeout: tt.timeout,
			})
			g.Expect(err).To(HaveOccurred())
			g.Expect(time.Since(start)).To(BeNumerically("<", tt.wantUnder))
			g.Expect(rel).NotTo(BeNil())
			g.Expect(rel.Info.Status).To(Equal(rcommon.StatusFailed))

			last, err := f.runner.Last("app")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(last.Info.Status).To(Equal(rcommon.StatusFailed), "the failure is stored, not left pending")
		})
	}
}

// cancelOnceWaiting calls cancel once the release name is stored pending,
// that is once its action waits, or when ctx ends first.
func cancelOnceWaiting(ctx context.Context, f *fixture, name string, cancel func()) {
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if last, err := f.runner.Last(name); err == nil && last != nil && last.Info != nil && last.Info.Status.IsPending() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func TestInstallWithoutWaitIgnoresReadiness(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	rel, err := f.runner.Install(context.Background(), basicChart(t, "1.0.0", neverReady(t)...), nil, InstallOptions{
		ReleaseName: "app", Namespace: f.target, ServerSideApply: true, Timeout: 2 * time.Second,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
}

func TestRender(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ch := basicChart(t, "1.0.0", helmtest.WithTemplate("service.yaml", `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
spec:
  ports:
  - port: 80
`))
	values := map[string]any{"greeting": "rendered"}
	installed := f.install(t, "app", ch, values)

	laptop, err := New(nil, "", WithSandbox(testSandbox(t)))
	g.Expect(err).NotTo(HaveOccurred())
	inProcess, err := New(nil, "")
	g.Expect(err).NotTo(HaveOccurred())
	tests := []struct {
		name   string
		runner *Runner
		opts   RenderOptions
	}{
		{name: "client only, without a cluster", runner: laptop, opts: RenderOptions{ClientOnly: true}},
		{name: "client only, in this process", runner: inProcess, opts: RenderOptions{ClientOnly: true}},
		{name: "client only, with a cluster", runner: f.runner, opts: RenderOptions{ClientOnly: true, KubeVersion: "v1.36.0"}},
		{name: "with the cluster's capabilities", runner: f.runner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.opts.ReleaseName, tt.opts.Namespace = "app", f.target
			manifest, hooks, err := tt.runner.Render(context.Background(), ch, values, tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(manifest).To(Equal(installed.Manifest))
			g.Expect(hooks).To(BeEmpty())
		})
	}

	_, _, err = laptop.Render(context.Background(), ch, values, RenderOptions{ReleaseName: "app", Namespace: "x"})
	g.Expect(err).To(MatchError(ContainSubstring("no cluster")))
	last, err := f.runner.History("app", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(versions(last)).To(Equal([]string{"v1=deployed"}), "rendering stores nothing")
}

func TestRenderIncludesCRDsWhenAsked(t *testing.T) {
	g := NewWithT(t)
	r, err := New(nil, "", WithSandbox(testSandbox(t)))
	g.Expect(err).NotTo(HaveOccurred())
	crd := crdManifest("render.windlass.test")
	ch := basicChart(t, "1.0.0", helmtest.WithFile("crds/widgets.yaml", []byte(crd)))
	for _, include := range []bool{false, true} {
		manifest, _, err := r.Render(context.Background(), ch, nil, RenderOptions{
			ReleaseName: "app", Namespace: "default", ClientOnly: true, IncludeCRDs: include,
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(manifest).To(ContainSubstring("kind: ConfigMap"))
		if include {
			g.Expect(manifest).To(ContainSubstring("widgets.render.windlass.test"))
		} else {
			g.Expect(manifest).NotTo(ContainSubstring("CustomResourceDefinition"))
		}
	}
}

func TestConcurrentInstalls(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ch := basicChart(t, "1.0.0")
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("app-%d", i)
			// One chart, shared by every install, as a chart cache would.
			_, errs[i] = f.runner.Install(context.Background(), ch, map[string]any{"greeting": name}, InstallOptions{
				ReleaseName: name, Namespace: f.target, ServerSideApply: true, Wait: true, Timeout: time.Minute,
			})
		}()
	}
	wg.Wait()
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		g.Expect(errs[i]).NotTo(HaveOccurred(), name)
		g.Expect(f.greeting(name + "-cm")).To(Equal(name))
		last, err := f.runner.Last(name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Info.Status).To(Equal(rcommon.StatusDeployed), name)
	}
	g.Expect(ch.Values).To(Equal(map[string]any{"greeting": "hello"}), "the shared chart is not changed")
}
