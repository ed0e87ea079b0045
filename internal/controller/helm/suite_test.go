package helm

import (
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	// env is the test control plane, with the source and helm controllers
	// of the real manager running against it (main_test.go).
	env *testenv.Environment
	// logs holds what the controllers logged.
	logs *testutil.Logs
)

// waitForHR returns the HelmRelease once cond holds for it, with the status
// rules checked.
func waitForHR(g *WithT, key client.ObjectKey, cond func(*helmv2.HelmRelease) bool) *helmv2.HelmRelease {
	return testutil.WaitFor(g, env.Client, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, cond)
}

// hrReady is a waitForHR condition: Ready for the current generation, with
// the latest release at chart version (any when empty).
func hrReady(version string) func(*helmv2.HelmRelease) bool {
	return func(hr *helmv2.HelmRelease) bool {
		latest := hr.Status.History.Latest()
		return conditions.IsTrue(hr, meta.ReadyCondition) && hr.Status.ObservedGeneration == hr.Generation &&
			latest != nil && (version == "" || latest.ChartVersion == version)
	}
}

// hrReason is a waitForHR condition on the reason of a condition.
func hrReason(conditionType, status, reason string) func(*helmv2.HelmRelease) bool {
	return func(hr *helmv2.HelmRelease) bool {
		c := conditions.Get(hr, conditionType)
		return c != nil && string(c.Status) == status && c.Reason == reason
	}
}
