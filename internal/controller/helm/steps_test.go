package helm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	helmaction "github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// stepRequeue is the DependencyRequeue of the reconcilers of the step
// tables.
const stepRequeue = 7 * time.Second

// stepHR returns the HelmRelease apps/app of chart "app" from the
// HelmRepository apps/charts, at generation 1, changed by mutate.
func stepHR(mutate ...func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", Generation: 1},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "app", Version: "1.x",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
			}},
			Timeout: &metav1.Duration{Duration: 30 * time.Second},
		},
	}
	for _, m := range mutate {
		m(hr)
	}
	return hr
}

// stepClient returns a fake client holding objs, whose RESTMapper knows
// the kinds of the scheme, and whose calls intercept changes (nil for
// none).
func stepClient(intercept *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	s := scheme.New()
	b := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(s)).WithObjects(objs...)
	if intercept != nil {
		b = b.WithInterceptorFuncs(*intercept)
	}
	return b.Build()
}

// failingGets intercepts every read with err.
func failingGets(err error) *interceptor.Funcs {
	return &interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return err
	}}
}

// recordedEvents drains the events of recorder.
func recordedEvents(recorder *events.FakeRecorder) []string {
	var out []string
	for len(recorder.Events) > 0 {
		out = append(out, <-recorder.Events)
	}
	return out
}

// TestStep_ReconcileGates runs the gates step of the HelmRelease alone:
// without gates a stale Approved goes; open gates approve; a closed or
// missing gate holds the run until the next interval, with one event on
// the transition; a gate in another namespace is refused under the
// cross-namespace lockdown.
func TestStep_ReconcileGates(t *testing.T) {
	ref := func(name string) meta.NamespacedObjectReference { return meta.NamespacedObjectReference{Name: name} }
	closed := "Reconciliation is waiting approval, gate 'apps/closed' is closed."
	tests := []struct {
		name           string
		gates          []meta.NamespacedObjectReference
		noCross        bool
		approved       bool // Approved=False/GateClosed before the step
		wantErr        testutil.Outcome
		wantReason     string
		wantMsg        string
		wantConditions []string
		wantEvents     []string
	}{
		{name: "no gates: a stale Approved goes", approved: true, wantConditions: []string{}},
		{name: "open gates approve", gates: []meta.NamespacedObjectReference{ref("open"), {Name: "ops", Namespace: "ops"}},
			wantConditions: []string{"Approved=True/GatesOpened"}},
		{name: "a closed gate holds", gates: []meta.NamespacedObjectReference{ref("open"), ref("closed")},
			wantErr: testutil.Holding, wantReason: meta.GateClosedReason, wantMsg: closed,
			wantConditions: []string{"Approved=False/GateClosed"}, wantEvents: []string{"Normal GateClosed " + closed}},
		{name: "still closed: no second event", gates: []meta.NamespacedObjectReference{ref("closed")}, approved: true,
			wantErr: testutil.Holding, wantReason: meta.GateClosedReason, wantMsg: closed,
			wantConditions: []string{"Approved=False/GateClosed"}},
		{name: "a missing gate holds", gates: []meta.NamespacedObjectReference{ref("gone")},
			wantErr: testutil.Holding, wantReason: meta.GateClosedReason, wantMsg: "gate 'apps/gone' is missing",
			wantConditions: []string{"Approved=False/GateClosed"},
			wantEvents:     []string{"Normal GateClosed Reconciliation is waiting approval, gate 'apps/gone' is missing."}},
		{name: "a gate in another namespace, refused", noCross: true, gates: []meta.NamespacedObjectReference{{Name: "ops", Namespace: "ops"}},
			wantErr: testutil.Stalled, wantReason: meta.AccessDeniedReason, wantMsg: "gate 'ops/ops' is in another namespace",
			wantConditions: []string{"Approved=False/AccessDenied"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			recorder := events.NewFakeRecorder(10)
			r := &HelmReleaseReconciler{
				Client: stepClient(nil, testutil.Gate("apps", "open", true), testutil.Gate("apps", "closed", false), testutil.Gate("ops", "ops", true)),
				Events: &event.Recorder{Kubernetes: recorder}, NoCrossNamespaceRefs: tt.noCross,
			}
			obj := stepHR(func(hr *helmv2.HelmRelease) { hr.Spec.Gates = tt.gates })
			if tt.approved {
				conditions.MarkFalse(obj, meta.ApprovedCondition, meta.GateClosedReason, "%s", closed)
			}

			err := r.runner().Admit(context.Background(), obj)
			testutil.ExpectError(g, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(testutil.ConditionSummary(obj)).To(Equal(tt.wantConditions))
			g.Expect(recordedEvents(recorder)).To(Equal(tt.wantEvents))
			if tt.wantErr == testutil.Holding {
				g.Expect(testutil.RequeueAfter(err)).To(Equal(time.Hour), "held until the next interval, or the gate opens")
			}
		})
	}
}

// chartArchives serves packaged charts by artifact digest, as the source
// controller's storage would: a digest it does not hold is gone from
// storage (fetch.ErrNotFound); err, when set, fails every read.
type chartArchives struct {
	data  map[string][]byte
	err   error
	reads int
}

func (c *chartArchives) ReadAll(_ context.Context, a meta.Artifact, _ int64) ([]byte, error) {
	c.reads++
	if c.err != nil {
		return nil, c.err
	}
	d, ok := c.data[a.Digest]
	if !ok {
		return nil, fmt.Errorf("%w: %s", fetch.ErrNotFound, a.Path)
	}
	return d, nil
}

// TestStep_ReconcileChart runs the chart step alone: a chart template
// makes (or updates) its HelmChart and records it in status.helmChart; a
// chartRef deletes a HelmChart left from a former template; the chart of
// the source's artifact is loaded once per digest (an OCIRepository's
// version takes the digest) and handed to the later steps. A source
// missing, without an artifact, or whose artifact is gone from storage is
// waited for; an artifact that cannot be read or is no chart fails; a
// refused cross-namespace template or a chartRef kind that is not served
// stalls. The step sets no condition.
func TestStep_ReconcileChart(t *testing.T) {
	const (
		chartDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		ociDigest   = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	)
	withArtifact := func(hc *sourcev1.HelmChart) *sourcev1.HelmChart {
		hc.Status.Artifact = &meta.Artifact{Path: "helmchart/apps/apps-app/app-1.0.0.tgz", Revision: "1.0.0", Digest: chartDigest}
		return hc
	}
	// templateChart returns the HelmChart of stepHR's template, as the
	// step writes it, with version.
	templateChart := func(version string) *sourcev1.HelmChart {
		return &sourcev1.HelmChart{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "apps-app",
				Labels: map[string]string{templateOwnerName: "app", templateOwnerNamespace: "apps"}},
			Spec: sourcev1.HelmChartSpec{Chart: "app", Version: version, Interval: metav1.Duration{Duration: time.Hour},
				SourceRef:         sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
				ReconcileStrategy: sourcev1.ReconcileStrategyChartVersion},
		}
	}
	chartRef := func(kind string) func(*helmv2.HelmRelease) {
		return func(hr *helmv2.HelmRelease) {
			hr.Spec.Chart = nil
			hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: kind, Name: "app"}
		}
	}
	ociRepository := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
		Status: sourcev1.OCIRepositoryStatus{Artifact: &meta.Artifact{Path: "ocirepository/apps/app/x.tgz", Revision: "1.0.0@" + ociDigest, Digest: ociDigest}}}
	tests := []struct {
		name      string
		mutate    func(*helmv2.HelmRelease)
		objs      []client.Object
		intercept *interceptor.Funcs
		noCross   bool
		// archives are the charts in storage by digest; readErr fails
		// every read.
		archives map[string][]byte
		readErr  error
		// loaded is a chart already loaded, by digest.
		loaded bool
		// wantHelmChart is status.helmChart afterwards, and the version
		// of that HelmChart in the cluster ("" when it must not exist).
		wantHelmChart string
		wantVersion   string
		// wantRevision is the chart version handed to the later steps.
		wantRevision string
		wantDigest   string
		wantReads    int
		wantErr      testutil.Outcome
		wantReason   string
		wantMsg      string
	}{
		{name: "a template makes its HelmChart, then waits for its artifact",
			wantHelmChart: "apps/apps-app", wantVersion: "1.x",
			wantErr: testutil.Waiting, wantReason: meta.ArtifactFailedReason, wantMsg: "source HelmChart 'apps/apps-app' has no artifact yet"},
		{name: "a HelmChart with an artifact: its chart is loaded", objs: []client.Object{withArtifact(templateChart("1.x"))},
			archives:      map[string][]byte{chartDigest: helmtest.Archive(t, helmtest.Chart(t, "app", "1.0.0"))},
			wantHelmChart: "apps/apps-app", wantVersion: "1.x", wantRevision: "1.0.0", wantDigest: chartDigest, wantReads: 1},
		{name: "a chart already loaded is not read again", objs: []client.Object{withArtifact(templateChart("1.x"))},
			loaded: true, readErr: errors.New("no read expected"),
			wantHelmChart: "apps/apps-app", wantVersion: "1.x", wantRevision: "1.0.0", wantDigest: chartDigest, wantReads: 0},
		{name: "the HelmChart of an older template is updated", objs: []client.Object{withArtifact(templateChart("0.9.0"))},
			archives:      map[string][]byte{chartDigest: helmtest.Archive(t, helmtest.Chart(t, "app", "1.0.0"))},
			wantHelmChart: "apps/apps-app", wantVersion: "1.x", wantRevision: "1.0.0", wantDigest: chartDigest, wantReads: 1},
		{name: "a HelmChart that cannot be created fails",
			intercept: &interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewForbidden(schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "helmcharts"}, "apps-app", errors.New("denied"))
			}},
			wantErr: testutil.Failing, wantReason: helmv2.ArtifactFailedReason, wantMsg: "creating HelmChart 'apps/apps-app'"},
		{name: "a template in another namespace, refused", noCross: true,
			mutate:  func(hr *helmv2.HelmRelease) { hr.Spec.Chart.Spec.SourceRef.Namespace = "infra" },
			wantErr: testutil.Stalled, wantReason: meta.AccessDeniedReason,
			wantMsg: "cross-namespace reference to HelmRepository 'infra/charts' is not allowed"},
		{name: "a chartRef to an OCIRepository: the version takes the digest", mutate: chartRef(sourcev1.OCIRepositoryKind),
			objs:         []client.Object{ociRepository},
			archives:     map[string][]byte{ociDigest: helmtest.Archive(t, helmtest.Chart(t, "app", "1.0.0"))},
			wantRevision: "1.0.0+fedcba987654", wantDigest: ociDigest, wantReads: 1},
		{name: "a chartRef deletes the HelmChart of a former template",
			mutate: func(hr *helmv2.HelmRelease) {
				chartRef(sourcev1.OCIRepositoryKind)(hr)
				hr.Status.HelmChart = "apps/apps-app"
			},
			objs:         []client.Object{ociRepository, withArtifact(templateChart("1.x"))},
			archives:     map[string][]byte{ociDigest: helmtest.Archive(t, helmtest.Chart(t, "app", "1.0.0"))},
			wantRevision: "1.0.0+fedcba987654", wantDigest: ociDigest, wantReads: 1},
		{name: "a chartRef whose source is missing", mutate: chartRef(sourcev1.OCIRepositoryKind),
			wantErr: testutil.Waiting, wantReason: meta.ArtifactFailedReason, wantMsg: "source OCIRepository 'apps/app' not found"},
		{name: "a chartRef of a kind that is not served", mutate: chartRef(sourcev1.GitRepositoryKind),
			wantErr: testutil.Stalled, wantReason: meta.UnsupportedSourceKindReason, wantMsg: "source kind 'GitRepository' is not served"},
		{name: "an artifact gone from storage is waited for", objs: []client.Object{withArtifact(templateChart("1.x"))},
			wantHelmChart: "apps/apps-app", wantVersion: "1.x", wantReads: 1,
			wantErr: testutil.Waiting, wantReason: helmv2.ArtifactFailedReason,
			wantMsg: "artifact for revision '1.0.0' is gone from storage"},
		{name: "an artifact that cannot be read fails", objs: []client.Object{withArtifact(templateChart("1.x"))},
			readErr:       errors.New("connection refused"),
			wantHelmChart: "apps/apps-app", wantVersion: "1.x", wantReads: 1,
			wantErr: testutil.Failing, wantReason: helmv2.ArtifactFailedReason,
			wantMsg: "reading the chart of revision '1.0.0': connection refused"},
		{name: "an artifact that is no chart fails", objs: []client.Object{withArtifact(templateChart("1.x"))},
			archives:      map[string][]byte{chartDigest: []byte("not a chart")},
			wantHelmChart: "apps/apps-app", wantVersion: "1.x", wantReads: 1,
			wantErr: testutil.Failing, wantReason: helmv2.ArtifactFailedReason, wantMsg: "loading the chart of revision '1.0.0'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			c := stepClient(tt.intercept, tt.objs...)
			reader := &chartArchives{data: tt.archives, err: tt.readErr}
			r := &HelmReleaseReconciler{Client: c, ChartReader: reader, NoCrossNamespaceRefs: tt.noCross, DependencyRequeue: stepRequeue}
			r.charts.init(DefaultChartCacheMaxMemory)
			if tt.loaded {
				r.charts.put(chartDigest, helmtest.Chart(t, "app", "1.0.0"))
			}
			obj := stepHR()
			if tt.mutate != nil {
				tt.mutate(obj)
			}
			sc := &releaseScope{}

			res, err := r.reconcileChart(ctx, obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			g.Expect(reader.reads).To(Equal(tt.wantReads))
			if tt.wantErr == testutil.Waiting {
				g.Expect(testutil.RequeueAfter(err)).To(Equal(stepRequeue))
			}
			g.Expect(obj.Status.HelmChart).To(Equal(tt.wantHelmChart))
			var hc sourcev1.HelmChart
			err = c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "apps-app"}, &hc)
			if tt.wantVersion == "" {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no HelmChart: %v", err)
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				want := templateChart(tt.wantVersion)
				g.Expect(hc.Spec).To(Equal(want.Spec))
				g.Expect(hc.Labels).To(Equal(want.Labels))
			}
			if tt.wantRevision == "" {
				g.Expect(sc.chart).To(BeNil())
				return
			}
			g.Expect(sc.chart).NotTo(BeNil())
			g.Expect(sc.chart.Metadata.Name).To(Equal("app"))
			g.Expect(sc.revision).To(Equal(tt.wantRevision))
			g.Expect(sc.chart.Metadata.Version).To(Equal(tt.wantRevision))
			g.Expect(sc.digest).To(Equal(tt.wantDigest))
		})
	}
}

// TestStep_ReconcileDependencies runs the dependencies step of the
// HelmRelease alone: dependencies of either kind that are Ready for their
// generation (or meet their readyExpr) let it go on; one missing or not
// ready is waited for; a cycle, across kinds too, a refused cross-namespace
// reference, a kind that cannot be depended on and a readyExpr that does
// not compile stall. The step sets no condition.
func TestStep_ReconcileDependencies(t *testing.T) {
	release := func(ns, name string, ready bool, dependsOn ...meta.DependencyReference) *helmv2.HelmRelease {
		hr := stepHR(func(hr *helmv2.HelmRelease) {
			hr.Namespace, hr.Name, hr.Spec.DependsOn = ns, name, dependsOn
			hr.Status.ObservedGeneration = 1
		})
		if ready {
			conditions.MarkTrue(hr, meta.ReadyCondition, meta.SucceededReason, "installed")
		} else {
			conditions.MarkFalse(hr, meta.ReadyCondition, helmv2.InstallFailedReason, "failed")
		}
		return hr
	}
	kustomization := func(ready bool, dependsOn ...meta.DependencyReference) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "crds", Generation: 3},
			Spec: kustomizev1.KustomizationSpec{DependsOn: dependsOn}}
		k.Status.ObservedGeneration = 3
		if ready {
			conditions.MarkTrue(k, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "applied")
		} else {
			conditions.MarkUnknown(k, meta.ReadyCondition, meta.ProgressingReason, "applying")
		}
		return k
	}
	dep := func(kind, name string) meta.DependencyReference {
		return meta.DependencyReference{Kind: kind, Name: name}
	}
	tests := []struct {
		name       string
		dependsOn  []meta.DependencyReference
		noCross    bool
		objs       []client.Object
		wantErr    testutil.Outcome
		wantReason string
		wantMsg    string
	}{
		{name: "no dependencies"},
		{name: "a ready HelmRelease", dependsOn: []meta.DependencyReference{dep("", "db")},
			objs: []client.Object{release("apps", "db", true)}},
		{name: "a ready Kustomization", dependsOn: []meta.DependencyReference{dep(kustomizev1.KustomizationKind, "crds")},
			objs: []client.Object{kustomization(true)}},
		{name: "a missing HelmRelease", dependsOn: []meta.DependencyReference{dep("", "db")},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' not found"},
		{name: "a HelmRelease that is not ready", dependsOn: []meta.DependencyReference{dep("", "db")},
			objs:    []client.Object{release("apps", "db", false)},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' is not ready"},
		{name: "a HelmRelease Ready for an older generation", dependsOn: []meta.DependencyReference{dep("", "db")},
			objs: []client.Object{func() client.Object {
				hr := release("apps", "db", true)
				hr.Generation = 2
				return hr
			}()},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' is not ready"},
		{name: "a Kustomization that is not ready", dependsOn: []meta.DependencyReference{dep(kustomizev1.KustomizationKind, "crds")},
			objs:    []client.Object{kustomization(false)},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'Kustomization/apps/crds' is not ready"},
		{name: "a readyExpr that holds", dependsOn: []meta.DependencyReference{{Name: "db", ReadyExpr: "dep.metadata.name == 'db'"}},
			objs: []client.Object{release("apps", "db", false)}},
		{name: "a readyExpr that does not compile", dependsOn: []meta.DependencyReference{{Name: "db", ReadyExpr: "dep.("}},
			objs:    []client.Object{release("apps", "db", true)},
			wantErr: testutil.Stalled, wantReason: meta.InvalidCELExpressionReason, wantMsg: "invalid readyExpr"},
		{name: "a cycle", dependsOn: []meta.DependencyReference{dep("", "db")},
			objs:    []client.Object{release("apps", "db", true, dep("", "app"))},
			wantErr: testutil.Stalled, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency cycle: apps/app -> apps/db -> apps/app"},
		{name: "a cycle through a Kustomization", dependsOn: []meta.DependencyReference{dep(kustomizev1.KustomizationKind, "crds")},
			objs:    []client.Object{kustomization(true, dep(helmv2.HelmReleaseKind, "app"))},
			wantErr: testutil.Stalled, wantReason: meta.DependencyNotReadyReason,
			wantMsg: "dependency cycle: apps/app -> Kustomization/apps/crds -> apps/app"},
		{name: "a ready HelmRelease in another namespace", dependsOn: []meta.DependencyReference{{Name: "db", Namespace: "infra"}},
			objs: []client.Object{release("infra", "db", true)}},
		{name: "a dependency in another namespace, refused", noCross: true,
			dependsOn: []meta.DependencyReference{{Name: "db", Namespace: "infra"}},
			objs:      []client.Object{release("infra", "db", true)},
			wantErr:   testutil.Stalled, wantReason: meta.AccessDeniedReason,
			wantMsg: "cross-namespace reference to HelmRelease 'infra/db' is not allowed"},
		{name: "a kind that cannot be depended on", dependsOn: []meta.DependencyReference{dep(sourcev1.HelmChartKind, "app")},
			wantErr: testutil.Stalled, wantReason: meta.DependencyNotReadyReason, wantMsg: "a HelmRelease cannot depend on a HelmChart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &HelmReleaseReconciler{Client: stepClient(nil, tt.objs...), NoCrossNamespaceRefs: tt.noCross, DependencyRequeue: stepRequeue}
			obj := stepHR(func(hr *helmv2.HelmRelease) { hr.Spec.DependsOn = tt.dependsOn })

			res, err := r.reconcileDependencies(context.Background(), obj, &releaseScope{})
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr == testutil.Waiting {
				g.Expect(testutil.RequeueAfter(err)).To(Equal(stepRequeue))
			}
		})
	}
}

// TestStep_ReconcileValues runs the values step alone: spec.valuesFrom, in
// order, then spec.values make the values and their digest; an object or
// key that is missing is waited for, unless optional; values that can
// never be read (not YAML, a kind that is neither ConfigMap nor Secret)
// stall; an object that cannot be read fails. The step sets no condition.
func TestStep_ReconcileValues(t *testing.T) {
	from := func(kind, name, key, targetPath string, optional bool) helmv2.ValuesReference {
		return helmv2.ValuesReference{Kind: kind, Name: name, ValuesKey: key, TargetPath: targetPath, Optional: optional}
	}
	base := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "base"},
		Data: map[string]string{"values.yaml": "greeting: from-configmap\nreplicas: 2\n", "broken.yaml": "greeting: [\n"}}
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "token"}, Data: map[string][]byte{"token": []byte("s3cret")}}
	tests := []struct {
		name       string
		valuesFrom []helmv2.ValuesReference
		values     string
		objs       []client.Object
		getErr     error
		wantValues map[string]any
		wantErr    testutil.Outcome
		wantReason string
		wantMsg    string
	}{
		{name: "no values", wantValues: map[string]any{}},
		{name: "inline values", values: `{"greeting":"hi"}`, wantValues: map[string]any{"greeting": "hi"}},
		{name: "a ConfigMap, then a Secret at a path, then inline values",
			valuesFrom: []helmv2.ValuesReference{from("ConfigMap", "base", "", "", false), from("Secret", "token", "token", "auth.token", false)},
			values:     `{"greeting":"inline"}`, objs: []client.Object{base, token},
			wantValues: map[string]any{"greeting": "inline", "replicas": float64(2), "auth": map[string]any{"token": "s3cret"}}},
		{name: "a missing ConfigMap is waited for", valuesFrom: []helmv2.ValuesReference{from("ConfigMap", "base", "", "", false)},
			wantErr: testutil.Waiting, wantReason: helmv2.InitFailedReason, wantMsg: "spec.valuesFrom[0]"},
		{name: "a missing key is waited for", valuesFrom: []helmv2.ValuesReference{from("ConfigMap", "base", "other.yaml", "", false)},
			objs:    []client.Object{base},
			wantErr: testutil.Waiting, wantReason: helmv2.InitFailedReason, wantMsg: "other.yaml"},
		{name: "a missing optional Secret adds nothing",
			valuesFrom: []helmv2.ValuesReference{from("Secret", "token", "token", "auth.token", true)}, values: `{"greeting":"hi"}`,
			wantValues: map[string]any{"greeting": "hi"}},
		{name: "values that are not YAML stall", valuesFrom: []helmv2.ValuesReference{from("ConfigMap", "base", "broken.yaml", "", false)},
			objs:    []client.Object{base},
			wantErr: testutil.Stalled, wantReason: helmv2.InitFailedReason, wantMsg: "spec.valuesFrom[0]"},
		{name: "a kind that is neither ConfigMap nor Secret stalls",
			valuesFrom: []helmv2.ValuesReference{from("HelmRelease", "base", "", "", false)},
			wantErr:    testutil.Stalled, wantReason: helmv2.InitFailedReason, wantMsg: "the kind must be ConfigMap or Secret"},
		{name: "an object that cannot be read fails", valuesFrom: []helmv2.ValuesReference{from("ConfigMap", "base", "", "", false)},
			objs:    []client.Object{base},
			getErr:  apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "base", errors.New("denied")),
			wantErr: testutil.Failing, wantReason: helmv2.InitFailedReason, wantMsg: "reading ConfigMap apps/base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var intercept *interceptor.Funcs
			if tt.getErr != nil {
				intercept = failingGets(tt.getErr)
			}
			r := &HelmReleaseReconciler{Client: stepClient(intercept, tt.objs...), DependencyRequeue: stepRequeue}
			obj := stepHR(func(hr *helmv2.HelmRelease) {
				hr.Spec.ValuesFrom = tt.valuesFrom
				if tt.values != "" {
					hr.Spec.Values = valuesJSON(tt.values)
				}
			})
			sc := &releaseScope{}

			res, err := r.reconcileValues(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr != testutil.NoError {
				g.Expect(sc.values).To(BeNil())
				g.Expect(sc.configDigest).To(BeEmpty())
				if tt.wantErr == testutil.Waiting {
					g.Expect(testutil.RequeueAfter(err)).To(Equal(stepRequeue))
				}
				return
			}
			g.Expect(sc.values).To(Equal(tt.wantValues))
			g.Expect(sc.configDigest).To(HavePrefix("sha256:"))
			g.Expect(sc.configDigest).To(Equal(helmaction.ConfigDigest(tt.wantValues)))
		})
	}
}

// TestStep_ReconcileHealth runs the health step of the HelmRelease alone
// against a fake cluster: without expressions or a release nothing is
// read; the release's objects that the expressions select are judged by
// them (a namespace-less one in the release's namespace): all current
// goes on, one Failed fails the run, one in progress or missing makes it
// progress and be checked again soon. Expressions that do not compile
// stall; a manifest that does not decode or an object that cannot be read
// fails. The step sets no condition.
func TestStep_ReconcileHealth(t *testing.T) {
	exprs := []kustomizev1.CustomHealthCheck{{APIVersion: "v1", Kind: "ConfigMap",
		Current: "metadata.labels.state == 'ok'", Failed: "metadata.labels.state == 'broken'"}}
	cm := func(name, state string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{"state": state}}}
	}
	manifest := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-cm\n" +
		"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secret\n"
	noRead := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "app-cm", errors.New("no read expected"))
	tests := []struct {
		name       string
		exprs      []kustomizev1.CustomHealthCheck
		manifest   string // of the release; "" for no release
		objs       []client.Object
		getErr     error
		wantErr    testutil.Outcome
		wantReason string
		wantMsg    string
	}{
		{name: "no expressions: nothing is read", manifest: manifest, getErr: noRead},
		{name: "no release: nothing is read", exprs: exprs, getErr: noRead},
		{name: "expressions that select nothing: nothing is read", manifest: manifest, getErr: noRead,
			exprs: []kustomizev1.CustomHealthCheck{{APIVersion: "apps/v1", Kind: "Deployment", Current: "true"}}},
		{name: "the selected objects are current", exprs: exprs, manifest: manifest, objs: []client.Object{cm("app-cm", "ok")}},
		{name: "a selected object failed", exprs: exprs, manifest: manifest, objs: []client.Object{cm("app-cm", "broken")},
			wantErr: testutil.Failing, wantReason: helmv2.HealthCheckFailedReason, wantMsg: "health check failed: ConfigMap/apps/app-cm"},
		{name: "a selected object in progress", exprs: exprs, manifest: manifest, objs: []client.Object{cm("app-cm", "pending")},
			wantErr: testutil.Progressing, wantReason: meta.ProgressingReason, wantMsg: "waiting for: ConfigMap/apps/app-cm"},
		{name: "a selected object missing", exprs: exprs, manifest: manifest,
			wantErr: testutil.Progressing, wantReason: meta.ProgressingReason, wantMsg: "waiting for: ConfigMap/apps/app-cm"},
		{name: "a kind-wide expression selects every object of its group", manifest: manifest,
			exprs:   []kustomizev1.CustomHealthCheck{{APIVersion: "v1", Current: "metadata.labels.state == 'ok'"}},
			objs:    []client.Object{cm("app-cm", "ok")},
			wantErr: testutil.Progressing, wantReason: meta.ProgressingReason, wantMsg: "waiting for: Secret/apps/app-secret"},
		{name: "expressions that do not compile stall", manifest: manifest,
			exprs:   []kustomizev1.CustomHealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: "metadata.("}},
			wantErr: testutil.Stalled, wantReason: meta.InvalidCELExpressionReason, wantMsg: "current"},
		{name: "a manifest that does not decode fails", exprs: exprs, manifest: "kind: [\n",
			wantErr: testutil.Failing, wantReason: helmv2.InventoryBuildFailedReason, wantMsg: "decoding the release manifest"},
		{name: "an object that cannot be read fails", exprs: exprs, manifest: manifest, getErr: noRead,
			wantErr: testutil.Failing, wantReason: helmv2.HealthCheckFailedReason, wantMsg: "no read expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var intercept *interceptor.Funcs
			if tt.getErr != nil {
				intercept = failingGets(tt.getErr)
			}
			c := stepClient(intercept, tt.objs...)
			r := &HelmReleaseReconciler{Client: c}
			obj := stepHR(func(hr *helmv2.HelmRelease) { hr.Spec.HealthCheckExprs = tt.exprs })
			sc := &releaseScope{target: &impersonation.Target{Client: c, Mapper: c.RESTMapper()}}
			if tt.manifest != "" {
				sc.last = &hrelease.Release{Name: "app", Namespace: "apps", Version: 1, Manifest: tt.manifest}
			}

			res, err := r.reconcileHealth(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr == testutil.Progressing {
				g.Expect(testutil.RequeueAfter(err)).To(Equal(healthRecheck))
			}
		})
	}
}
