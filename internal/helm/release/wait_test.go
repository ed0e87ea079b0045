package release

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
	objversions "github.com/windlass-dev/windlass/internal/versions"
)

// statusWidget is a Widget of group that is still reconciling: its CRD
// keeps unknown fields, status included, so the chart sets it.
func statusWidget(group string) string {
	return `apiVersion: ` + group + `/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
spec:
  size: 1
status:
  conditions:
  - {type: Reconciling, status: "True", reason: Progressing, message: warming up}
`
}

// checkedFixture is a fixture whose runner waits with a health checker.
func checkedFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t, WithHealthChecker(health.NewChecker(env.Client, env.Client.RESTMapper())))
}

// setWidgetConditions replaces the conditions of Widget ns/name of group
// once it exists.
func setWidgetConditions(g Gomega, group, ns, name string, conditions ...map[string]any) {
	g.Eventually(func() error {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"})
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return err
		}
		list := make([]any, 0, len(conditions))
		for _, c := range conditions {
			list = append(list, c)
		}
		if err := unstructured.SetNestedSlice(w.Object, list, "status", "conditions"); err != nil {
			return err
		}
		return env.Client.Update(context.Background(), w)
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
}

// TestCheckedWait: with a health checker, an install waits until the
// release's objects are Current by reading each one: it ends as soon as
// they are, fails at once on a Failed one (naming it), fails at the
// timeout on one that stays in progress, and skips Jobs and paused
// Deployments.
func TestCheckedWait(t *testing.T) {
	tests := []struct {
		name string
		// later sets the Widget's conditions while the install waits; nil
		// leaves it reconciling.
		later     []map[string]any
		timeout   time.Duration
		wantErr   string
		wantUnder time.Duration
	}{
		{name: "ready while waiting", later: []map[string]any{{"type": "Ready", "status": "True", "reason": "Done", "message": "done"}},
			timeout: time.Minute, wantUnder: 30 * time.Second},
		{name: "failed while waiting", later: []map[string]any{{"type": "Stalled", "status": "True", "reason": "Broken", "message": "the widget is broken"}},
			timeout: time.Minute, wantErr: "the widget is broken", wantUnder: 30 * time.Second},
		{name: "in progress until the timeout", timeout: 10 * time.Second, wantErr: "warming up", wantUnder: 30 * time.Second},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := checkedFixture(t)
			group := "checked" + string(rune('a'+i)) + ".example.com"
			ch := basicChart(t, "1.0.0", helmtest.WithFile("crds/widgets.yaml", []byte(crdManifest(group))),
				helmtest.WithTemplate("widget.yaml", statusWidget(group)),
				helmtest.WithTemplate("job.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-job\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: registry.invalid/job:1}]\n"),
				helmtest.WithTemplate("paused.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-paused\nspec:\n  paused: true\n  replicas: 1\n  selector: {matchLabels: {app: paused}}\n  template:\n    metadata: {labels: {app: paused}}\n    spec:\n      containers: [{name: c, image: registry.invalid/paused:1}]\n"))
			if tt.later != nil {
				go setWidgetConditions(g, group, f.target, "app-widget", tt.later...)
			}
			start := time.Now()
			rel, err := f.runner.Install(context.Background(), ch, nil, InstallOptions{
				ReleaseName: "app", Namespace: f.target, ServerSideApply: true, CRDs: "Create",
				Wait: true, Timeout: tt.timeout,
			})
			g.Expect(time.Since(start)).To(BeNumerically("<", tt.wantUnder))
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).To(ContainSubstring("Widget/" + f.target + "/app-widget"))
			g.Expect(err.Error()).NotTo(ContainSubstring("app-job"), "a Job is not waited for without WaitForJobs")
			g.Expect(err.Error()).NotTo(ContainSubstring("app-paused"), "a paused Deployment is not waited for")
			g.Expect(rel.Info.Status).To(Equal(rcommon.StatusFailed))
		})
	}
}

// TestWaitedRefs: Jobs count only when Jobs are waited for, paused
// Deployments never, and the rest by their mapping's kind.
func TestWaitedRefs(t *testing.T) {
	g := NewWithT(t)
	object := func(apiVersion, kind, name string, spec map[string]any) *resource.Info {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
		u.SetName(name)
		u.SetNamespace("apps")
		return &resource.Info{Namespace: "apps", Name: name, Object: u}
	}
	list := kube.ResourceList{
		object("v1", "ConfigMap", "cm", nil),
		object("batch/v1", "Job", "job", map[string]any{}),
		object("apps/v1", "Deployment", "paused", map[string]any{"paused": true}),
		object("apps/v1", "Deployment", "web", map[string]any{"replicas": int64(1)}),
	}
	names := func(refs []health.ObjectRef) []string {
		var out []string
		for _, r := range refs {
			out = append(out, r.Kind+"/"+r.Name)
		}
		return out
	}
	refs, err := waitedRefs(list, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(refs)).To(Equal([]string{"ConfigMap/cm", "Deployment/web"}))
	refs, err = waitedRefs(list, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(refs)).To(Equal([]string{"ConfigMap/cm", "Job/job", "Deployment/web"}))
	g.Expect(refs[2].APIVersion).To(Equal("apps/v1"))
}

// TestCheckedWaitReadsWhatTheApplyDidNotReturn: an install that waits
// judges the objects its apply returned from that answer (a ConfigMap is
// Current at once: the only read of it is the SDK's check that it did not
// exist yet), and no action asks discovery whether the cluster is
// reachable (only the capabilities, once for both installs).
func TestCheckedWaitReadsWhatTheApplyDidNotReturn(t *testing.T) {
	g := NewWithT(t)
	reads := &testutil.RequestCounter{Match: testutil.IsNamedRead}
	var versionReads atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return reads.Wrap(roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/version" {
				versionReads.Add(1)
			}
			return rt.RoundTrip(r)
		}))
	})
	counted, err := NewGetter(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	checkReads, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme(), Mapper: env.Client.RESTMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	f := &fixture{storage: env.CreateNamespace(t), target: env.CreateNamespace(t)}
	f.runner, err = New(counted, f.storage, WithSandbox(testSandbox(t)),
		WithHealthChecker(health.NewChecker(checkReads, env.Client.RESTMapper())))
	g.Expect(err).NotTo(HaveOccurred())

	for _, name := range []string{"one", "two"} {
		rel, err := f.runner.Install(context.Background(), basicChart(t, "1.0.0"), nil, InstallOptions{
			ReleaseName: name, Namespace: f.target, ServerSideApply: true, Wait: true, Timeout: time.Minute,
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
		g.Expect(reads.Of(f.target, "configmaps", name+"-cm")).To(Equal(1), "the SDK's existence check only")
	}
	g.Expect(versionReads.Load()).To(BeNumerically("<=", 1), "the capabilities' discovery only")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAppliedReportsVersions: the applies of an install and an upgrade
// report the fields version of each object in the API server's answer,
// the fields version the object is at right after.
func TestAppliedReportsVersions(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	cmID := inventory.ObjMetadata{Namespace: f.target, Name: "app-cm", Kind: "ConfigMap"}
	live := func() string {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.target, Name: "app-cm"}, cm)).To(Succeed())
		return objversions.FieldsDigest(cm, FieldManager)
	}

	var installed map[inventory.ObjMetadata]string
	_, err := f.runner.Install(context.Background(), basicChart(t, "1.0.0"), nil, InstallOptions{
		ReleaseName: "app", Namespace: f.target, ServerSideApply: true,
		Applied: func(v map[inventory.ObjMetadata]string) { installed = v },
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(installed).To(HaveKeyWithValue(cmID, live()))
	g.Expect(installed[cmID]).NotTo(BeEmpty())

	var upgraded map[inventory.ObjMetadata]string
	_, err = f.runner.Upgrade(context.Background(), basicChart(t, "1.0.1"), map[string]any{"greeting": "new"}, UpgradeOptions{
		ReleaseName: "app", Applied: func(v map[inventory.ObjMetadata]string) { upgraded = v },
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(upgraded).To(HaveKeyWithValue(cmID, live()))
}

// TestCheckedWaitAsksTheWatch: with a health watch, the polls of a wait
// after the first take the health of what was not ready from the watch:
// a Deployment that becomes available, and one that never does, are read
// by none of them (but one poll may read an object that the watch has not
// delivered yet; without the watch, the stuck one is read four times).
func TestCheckedWaitAsksTheWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reads := &testutil.RequestCounter{Match: testutil.IsNamedRead}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(reads.Wrap)
	checkReads, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme(), Mapper: env.Client.RESTMapper()})
	g.Expect(err).NotTo(HaveOccurred())
	watch := deploymentWatch(t, g)
	f := checkedFixture(t)
	f.runner, err = New(getter(t), f.storage, WithSandbox(testSandbox(t)),
		WithHealthChecker(health.NewChecker(checkReads, env.Client.RESTMapper())), WithHealthWatch(watch))
	g.Expect(err).NotTo(HaveOccurred())
	ch := watchedWebChart(t)

	go makeAvailable(t, watch, f.target, "ready-web")
	rel, err := f.runner.Install(ctx, ch, nil, InstallOptions{
		ReleaseName: "ready", Namespace: f.target, ServerSideApply: true, Wait: true, Timeout: time.Minute,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
	g.Expect(reads.Of(f.target, "deployments", "ready-web")).To(BeNumerically("<=", 1), "the polls ask the watch")

	_, err = f.runner.Install(ctx, ch, nil, InstallOptions{
		ReleaseName: "stuck", Namespace: f.target, ServerSideApply: true, Wait: true, Timeout: 4 * time.Second,
	})
	g.Expect(err).To(MatchError(ContainSubstring("Deployment/" + f.target + "/stuck-web")))
	g.Expect(reads.Of(f.target, "deployments", "stuck-web")).To(BeNumerically("<=", 1),
		"four polls in four seconds, the watch asked")
}

// TestCheckedWaitIsWokenByTheWatch: a wait whose polls are an hour apart
// ends as soon as the watch judges its Deployment available: the watch
// woke it. Without the wakes it would poll again only after the hour.
func TestCheckedWaitIsWokenByTheWatch(t *testing.T) {
	g := NewWithT(t)
	watch := deploymentWatch(t, g)
	f := checkedFixture(t)
	var err error
	f.runner, err = New(getter(t), f.storage, WithSandbox(testSandbox(t)),
		WithHealthChecker(health.NewChecker(env.Client, env.Client.RESTMapper())), WithHealthWatch(watch),
		WithHealthWakes(health.NewWakes(watch)), withPolls(pollDelays{first: time.Hour, longest: time.Hour}))
	g.Expect(err).NotTo(HaveOccurred())

	go makeAvailable(t, watch, f.target, "woken-web")
	rel, err := f.runner.Install(context.Background(), watchedWebChart(t), nil, InstallOptions{
		ReleaseName: "woken", Namespace: f.target, ServerSideApply: true, Wait: true, Timeout: 2 * time.Hour,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
}

// withPolls sets the delays between the polls of the Runner's checked
// waits.
func withPolls(p pollDelays) Option {
	return func(r *Runner) { r.polls = p }
}

// deploymentWatch returns a versions cache, synced, that judges the
// Deployments labelled windlass-test/watched.
func deploymentWatch(t *testing.T, g *WithT) *objversions.Cache {
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	watch, err := objversions.New(env.Config, env.Client.RESTMapper(), "windlass-test/watched",
		objversions.WithHealth(health.Judge, health.Watchable, nil))
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = watch.Start(ctx) }()
	g.Expect(watch.WaitForSync(ctx, appsv1.SchemeGroupVersion.WithKind("Deployment"))).To(BeTrue())
	return watch
}

// watchedWebChart is a chart of one Deployment, <release>-web, that the
// deploymentWatch judges.
func watchedWebChart(t *testing.T) *chart.Chart {
	return basicChart(t, "1.0.0", helmtest.WithTemplate("web.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels: {windlass-test/watched: "yes"}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: registry.invalid/web:1}]
`))
}

// makeAvailable says, once the watch holds it, that the Deployment is
// available: there is no kube-controller-manager here to say it.
func makeAvailable(t *testing.T, watch *objversions.Cache, ns, name string) {
	ctx := context.Background()
	g := NewWithT(t)
	deployments := appsv1.SchemeGroupVersion.WithKind("Deployment")
	g.Eventually(func() bool { _, ok := watch.Health(ctx, deployments, ns, name); return ok }, 30*time.Second, 20*time.Millisecond).Should(BeTrue())
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
	}}
	g.Expect(env.Client.Status().Update(ctx, d)).To(Succeed())
}
