package helm

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	hrelease "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// helmActions is what the Helm action metrics say of one action at one
// time. The metrics are the process's, shared by every test of the
// package: the stories compare two readings and expect an increase, never
// a value.
type helmActions struct {
	// samples counts the durations observed: the actions run.
	samples uint64
	// failures counts those that failed.
	failures float64
}

// helmActionsOf reads the Helm action metrics of action.
func helmActionsOf(action string) helmActions {
	return helmActions{
		samples:  testutil.SampleCount(metrics.HelmActionDuration.WithLabelValues(action)),
		failures: promtest.ToFloat64(metrics.HelmActionFailures.WithLabelValues(action)),
	}
}

// driftCorrected returns the objects whose drift HelmReleases corrected so
// far.
func driftCorrected() float64 {
	return promtest.ToFloat64(metrics.DriftCorrections.WithLabelValues(helmv2.HelmReleaseKind))
}

// TestHelmActionRecordsDurationAndFailure: each action run is one
// duration observed; a failed one is a failure too. Each case has an
// action label of its own, so that the counts are exact.
func TestHelmActionRecordsDurationAndFailure(t *testing.T) {
	g := NewWithT(t)
	rel := &hrelease.Release{Name: "app"}
	got, err := helmAction("helmActionTest-ok", func() (*hrelease.Release, error) { return rel, nil })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeIdenticalTo(rel))
	g.Expect(helmActionsOf("helmActionTest-ok")).To(Equal(helmActions{samples: 1}))

	failed := errors.New("timed out waiting for the condition")
	got, err = helmAction("helmActionTest-failed", func() (*hrelease.Release, error) { return rel, failed })
	g.Expect(err).To(MatchError(failed))
	g.Expect(got).To(BeIdenticalTo(rel), "a failed action's release is kept")
	g.Expect(helmActionsOf("helmActionTest-failed")).To(Equal(helmActions{samples: 1, failures: 1}))
}
