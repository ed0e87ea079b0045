package helm

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// TestChartThatExhaustsItsRenderFailsOnItsOwn: a chart whose template asks
// for gigabytes (the review's `repeat`; its `until`, which takes longer to
// get there, is in internal/helm/sandbox) fails its own HelmRelease with a
// message that says so, while the controller goes on serving the others.
func TestChartThatExhaustsItsRenderFailsOnItsOwn(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns,
		helmtest.Chart(t, "bomb", "1.0.0", helmtest.WithTemplate("cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: bomb
data: {n: "{{ len (repeat 300000000 "x") }}"}
`)),
		helmtest.Chart(t, "app", "1.0.0"))
	bomb := newRelease(g, ns, "bomb", "bomb")
	app := newRelease(g, ns, "app", "app")

	got := waitForHR(g, client.ObjectKeyFromObject(bomb), func(hr *helmv2.HelmRelease) bool {
		ready := conditions.Get(hr, meta.ReadyCondition)
		return ready != nil && ready.Status == "False" && strings.Contains(ready.Message, "needed more memory than it may use")
	})
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("256 MiB"))
	g.Expect(testutil.EventMessages(g, env.Client, got, helmv2.HelmReleaseKind)).To(ContainElement(ContainSubstring("needed more memory")))
	waitForHR(g, client.ObjectKeyFromObject(app), hrReady("1.0.0"))
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "hello"))
}
