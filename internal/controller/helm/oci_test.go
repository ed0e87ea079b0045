package helm

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// TestChartFromOCIRepository: a chart pushed to a registry installs
// through an OCIRepository named in spec.chartRef, and upgrades when the
// OCIRepository moves to a new version.
func TestChartFromOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	registry := testutil.StartRegistry(t, "", "")
	helmtest.PushOCI(t, registry, "charts/app", helmtest.Chart(t, "app", "1.0.0"))
	helmtest.PushOCI(t, registry, "charts/app", helmtest.Chart(t, "app", "1.1.0"))
	oci := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: sourcev1.OCIRepositorySpec{
			URL: "oci://" + registry + "/charts/app", Insecure: true, Interval: metav1.Duration{Duration: time.Hour},
			Reference:     &sourcev1.OCIRepositoryRef{Tag: "1.0.0"},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: string(helmtest.OCIChartMediaType), Operation: sourcev1.OCILayerCopy},
		},
	}
	g.Expect(env.Client.Create(context.Background(), oci)).To(Succeed())
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Hour},
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "app"},
		},
	}
	g.Expect(env.Client.Create(context.Background(), hr)).To(Succeed())
	key := client.ObjectKeyFromObject(hr)
	got := waitForHR(g, key, hrReady(""))
	g.Expect(got.Status.History.Latest().ChartVersion).To(HavePrefix("1.0.0+"), "the version carries the artifact's digest")
	g.Expect(got.Status.HelmChart).To(BeEmpty())
	configMap(g, ns, "app-cm")

	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(oci), oci)).To(Succeed())
	oci.Spec.Reference.Tag = "1.1.0"
	g.Expect(env.Client.Update(context.Background(), oci)).To(Succeed())
	got = waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
		l := hr.Status.History.Latest()
		return hrReady("")(hr) && l != nil && l.Version == 2
	})
	g.Expect(got.Status.History.Latest().ChartVersion).To(HavePrefix("1.1.0+"))
}

// TestChartFromOCIHelmRepository: a chart template naming an OCI
// HelmRepository installs the chart the registry holds.
func TestChartFromOCIHelmRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	registry := testutil.StartRegistry(t, "", "")
	helmtest.PushOCI(t, registry, "charts/app", helmtest.Chart(t, "app", "1.2.0"))
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
		Spec: sourcev1.HelmRepositorySpec{URL: "oci://" + registry + "/charts", Type: sourcev1.HelmRepositoryTypeOCI,
			Insecure: true, Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(env.Client.Create(context.Background(), repo)).To(Succeed())
	hr := newRelease(g, ns, "app", "app")
	waitForHR(g, client.ObjectKeyFromObject(hr), hrReady("1.2.0"))
	configMap(g, ns, "app-cm")
}
