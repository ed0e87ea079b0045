package helm

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// TestHelmReleasesWhoseChartNamesCollide: HelmRelease team/a-web and
// HelmRelease team-a/web both name their HelmChart team-a-web in the
// namespace of a shared HelmRepository. The first keeps its chart; the
// second fails with a message that says whose the chart is, changes
// nothing of it, and deleting it leaves the chart to its owner.
func TestHelmReleasesWhoseChartNamesCollide(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	team := env.CreateNamespace(t)
	teamA := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team + "-a"}}
	g.Expect(env.Client.Create(ctx, teamA)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), teamA) })
	shared := env.CreateNamespace(t)
	newRepository(t, g, shared, helmtest.Chart(t, "app", "1.0.0"), helmtest.Chart(t, "other", "1.0.0"))
	fromShared := func(hr *helmv2.HelmRelease) { hr.Spec.Chart.Spec.SourceRef.Namespace = shared }

	first := newRelease(g, team, "a-web", "app", fromShared)
	waitForHR(g, client.ObjectKeyFromObject(first), hrReady("1.0.0"))
	second := newRelease(g, teamA.Name, "web", "other", fromShared, func(hr *helmv2.HelmRelease) {
		// A template's labels cannot claim the chart either.
		hr.Spec.Chart.ObjectMeta = &helmv2.HelmChartTemplateObjectMeta{Labels: map[string]string{templateOwnerName: "a-web", templateOwnerNamespace: team}}
	})
	chartName := team + "-a-web"

	got := waitForHR(g, client.ObjectKeyFromObject(second), func(hr *helmv2.HelmRelease) bool {
		ready := conditions.Get(hr, meta.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionFalse && strings.Contains(ready.Message, "HelmChart '"+shared+"/"+chartName+"'")
	})
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("is HelmRelease '" + team + "/a-web''s, not this HelmRelease's"))
	g.Expect(got.Status.HelmChart).To(BeEmpty())
	g.Expect(got.Status.History).To(BeEmpty(), "nothing was installed")

	hc := &sourcev1.HelmChart{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: shared, Name: chartName}, hc)).To(Succeed())
	g.Expect(hc.Spec.Chart).To(Equal("app"))
	g.Expect(hc.Labels).To(HaveKeyWithValue(templateOwnerNamespace, team))

	g.Expect(env.Client.Delete(ctx, second)).To(Succeed())
	g.Eventually(func() bool {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(second), &helmv2.HelmRelease{}) != nil
	}, testutil.WaitTimeout).Should(BeTrue())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: shared, Name: chartName}, hc)).To(Succeed(), "the owner's chart stays")
	testutil.RequestReconcile(g, env.Client, first, "after")
	waitForHR(g, client.ObjectKeyFromObject(first), func(hr *helmv2.HelmRelease) bool {
		return hr.Status.LastHandledReconcileAt == "after" && hrReady("1.0.0")(hr)
	})
}
