package helm

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestCheckServed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		chartRef   *helmv2.CrossNamespaceSourceReference
		verify     string
		sourceKind string
		kubeConfig *meta.KubeConfigReference
		wantReason string
		wantErr    string
	}{
		{name: "spec.chart on the local cluster"},
		{name: "chartRef to an OCIRepository", chartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "c"}},
		{name: "remote cluster by secretRef", kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kc"}}},
		{name: "remote cluster by configMapRef",
			kubeConfig: &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}},
			wantReason: meta.UnsupportedKubeConfigReason, wantErr: "spec.kubeConfig.configMapRef (workload identity for remote clusters) is not served"},
		{name: "chart verified with cosign", verify: "cosign"},
		{name: "chart of a GitRepository verified", verify: "cosign", sourceKind: sourcev1.GitRepositoryKind,
			wantReason: meta.UnsupportedVerificationReason, wantErr: "the chart comes from GitRepository 'charts'"},
		{name: "chart verified with notation", verify: "notation",
			wantReason: meta.UnsupportedVerificationProviderReason, wantErr: "spec.chart.spec.verify.provider 'notation' is not served by Windlass"},
		{name: "chartRef to a kind not served", chartRef: &helmv2.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "c"},
			wantReason: meta.UnsupportedSourceKindReason, wantErr: "source kind 'GitRepository' is not served by Windlass (served: ExternalArtifact, HelmChart, OCIRepository)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &helmv2.HelmRelease{Spec: helmv2.HelmReleaseSpec{ChartRef: tc.chartRef, KubeConfig: tc.kubeConfig}}
			if tc.verify != "" {
				obj.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: "app", Verify: &helmv2.HelmChartTemplateVerification{Provider: tc.verify},
					SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"},
				}}
				if tc.sourceKind != "" {
					obj.Spec.Chart.Spec.SourceRef.Kind = tc.sourceKind
				}
			}
			err := checkServed(obj)
			testutil.ExpectStall(g, err, tc.wantReason, tc.wantErr)
		})
	}
}

// TestUnservedKubeConfigInstallsNothing: a HelmRelease meant for a remote
// cluster through configMapRef (workload identity, not served) is Stalled
// at once: no HelmChart, no release, no object on the local cluster, and
// it deletes cleanly. Both refs together are refused by the API server.
func TestUnservedKubeConfigInstallsNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}}
	})

	got := waitForHR(g, client.ObjectKeyFromObject(hr), hrReason(meta.ReadyCondition, "False", meta.UnsupportedKubeConfigReason))
	g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeTrue())
	g.Expect(conditions.Message(got, meta.ReadyCondition)).To(ContainSubstring("use spec.kubeConfig.secretRef"))
	g.Expect(got.Status.History).To(BeEmpty())
	g.Consistently(func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-cm"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no object of the chart on the local cluster")
		var charts sourcev1.HelmChartList
		g.Expect(env.Client.List(ctx, &charts, client.InNamespace(ns))).To(Succeed())
		g.Expect(charts.Items).To(BeEmpty(), "no HelmChart is made")
		var secrets corev1.SecretList
		g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
		g.Expect(secrets.Items).To(BeEmpty(), "no release record")
	}, "2s", "200ms").Should(Succeed())

	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{}))
	}, testutil.WaitTimeout).Should(BeTrue(), "the finalizer lets it go")

	for name, kc := range map[string]*meta.KubeConfigReference{
		"both": {SecretRef: &meta.SecretKeyReference{Name: "kc"}, ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}},
		"none": {},
	} {
		bad := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad-" + name}, Spec: *hr.Spec.DeepCopy()}
		bad.Spec.KubeConfig = kc
		err := env.Client.Create(ctx, bad)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring("exactly one of spec.kubeConfig.secretRef or spec.kubeConfig.configMapRef must be set"))
	}
}

// TestExternalArtifactChartRef: a HelmRelease installs a chart that an
// ArtifactGenerator composed from an OCIRepository's chart and a
// GitRepository's values file (merged over the chart's values), written
// as the reference's manifests are; a new values file upgrades it.
func TestExternalArtifactChartRef(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	registry := testutil.StartRegistry(t, "", "")
	helmtest.PushOCI(t, registry, "charts/app", helmtest.Chart(t, "app", "1.0.0"))
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "values.git", "main")
	repo.MustCommit(t, "main", map[string]string{"charts/app/values-prod.yaml": "greeting: hello prod\n"}, "values")
	for _, obj := range []client.Object{
		&sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-chart"}, Spec: sourcev1.OCIRepositorySpec{
			URL: "oci://" + registry + "/charts/app", Insecure: true, Interval: metav1.Duration{Duration: time.Hour},
			Reference:     &sourcev1.OCIRepositoryRef{Tag: "1.0.0"},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: string(helmtest.OCIChartMediaType), Operation: sourcev1.OCILayerCopy},
		}},
		&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-values"}, Spec: sourcev1.GitRepositorySpec{
			URL: base + "/values.git", Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
		}},
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	for _, manifest := range []string{`apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: app
spec:
  sources:
    - alias: chart
      kind: OCIRepository
      name: app-chart
    - alias: repo
      kind: GitRepository
      name: app-values
  artifacts:
    - name: app-composite
      originRevision: "@chart"
      copy:
        - from: "@chart/"
          to: "@artifact/"
        - from: "@repo/charts/app/values-prod.yaml"
          to: "@artifact/app/values.yaml"
          strategy: Merge
`, `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: app
spec:
  interval: 15m
  releaseName: app
  chartRef:
    kind: ExternalArtifact
    name: app-composite
`} {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
		u.SetNamespace(ns)
		g.Expect(env.Client.Create(ctx, u)).To(Succeed())
	}
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	got := waitForHR(g, key, hrReady(""))
	g.Expect(got.Status.History.Latest().ChartName).To(Equal("app"))
	g.Expect(got.Status.History.Latest().ChartVersion).To(HavePrefix("1.0.0+"), "the version carries the artifact's digest")
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "hello prod"))

	repo.MustCommit(t, "main", map[string]string{"charts/app/values-prod.yaml": "greeting: hello again\n"}, "values 2")
	testutil.RequestReconcile(g, env.Client, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-values"}}, "values-2")
	g.Eventually(func() string { return configMap(g, ns, "app-cm").Data["greeting"] }, 60*time.Second, 200*time.Millisecond).
		Should(Equal("hello again"))
}
