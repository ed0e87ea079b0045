package source

import (
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// Limits of the tests' Helm controllers, far above what the tests' charts
// and indexes hold but one test's.
const (
	maxHelmIndexSize = 256 << 10
	maxHelmChartFile = 64 << 10
)

// helmIndexes is the parsed index cache the tests' HelmRepository and
// HelmChart reconcilers share.
var helmIndexes *repository.IndexCache

// newHelmRepository returns a HelmRepository of url with a long interval.
func newHelmRepository(ns, name, url string) *sourcev1.HelmRepository {
	return &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       sourcev1.HelmRepositorySpec{URL: url, Interval: metav1.Duration{Duration: 10 * time.Minute}},
	}
}

// newHelmChart returns a HelmChart of chart in the source kind/source,
// with a long interval.
func newHelmChart(ns, name, kind, source, chartName string) *sourcev1.HelmChart {
	return &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.HelmChartSpec{
			Chart:     chartName,
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: kind, Name: source},
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// waitForHelmRepo returns the HelmRepository once cond holds for it, with
// the status rules checked.
func waitForHelmRepo(g *WithT, obj *sourcev1.HelmRepository, cond func(*sourcev1.HelmRepository) bool) *sourcev1.HelmRepository {
	return testutil.WaitFor(g, env.Client, obj, cond, helmRepositoryNegativeConditions...)
}

// waitForChart returns the HelmChart once cond holds for it, with the
// status rules checked.
func waitForChart(g *WithT, obj *sourcev1.HelmChart, cond func(*sourcev1.HelmChart) bool) *sourcev1.HelmChart {
	return testutil.WaitFor(g, env.Client, obj, cond, helmChartNegativeConditions...)
}

// helmRepoReady is a waitFor condition: Ready=True with an artifact for
// the current generation.
func helmRepoReady(o *sourcev1.HelmRepository) bool {
	return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation && o.Status.Artifact != nil
}

// chartReadyAt is a waitFor condition: Ready=True with the artifact of
// revision (any when empty) for the current generation.
func chartReadyAt(revision string) func(*sourcev1.HelmChart) bool {
	return func(o *sourcev1.HelmChart) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) && o.Status.ObservedGeneration == o.Generation &&
			o.Status.Artifact != nil && (revision == "" || o.Status.Artifact.Revision == revision)
	}
}

// helmCondition is a waitFor condition on one condition's status and
// reason, for either Helm kind.
func helmCondition[T conditions.Getter](conditionType string, status metav1.ConditionStatus, reason string) func(T) bool {
	return func(o T) bool {
		c := conditions.Get(o, conditionType)
		return c != nil && c.Status == status && c.Reason == reason
	}
}
