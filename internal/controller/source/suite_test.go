package source

import (
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	// env is the test control plane, with the source controller of the
	// real manager running against it (main_test.go).
	env *testenv.Environment
	// storage is the controller's artifact storage.
	storage *artifact.Storage
	// k8s is the manager's cached client, as the controller sees the world.
	k8s client.Client
	// logs holds what the controller logged.
	logs *testutil.Logs
)

// maxCloneSize bounds the clones of the tests' controller, far above what
// the tests' repositories hold but one test's.
const maxCloneSize = 4 << 20

// maxFetchSize bounds the OCI layers and buckets of the tests' controller.
const maxFetchSize = 1 << 20

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

// newGitRepository returns a GitRepository for url with a short interval.
func newGitRepository(ns, name, url string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{
			URL:      url,
			Interval: metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// waitFor returns the object once cond holds for it, with the status
// rules checked.
func waitFor(g *WithT, obj *sourcev1.GitRepository, cond func(*sourcev1.GitRepository) bool) *sourcev1.GitRepository {
	return testutil.WaitFor(g, env.Client, obj, cond, gitRepositoryNegativeConditions...)
}

// readyAt is a waitFor condition: Ready=True for the current generation.
func readyAt(revision string) func(*sourcev1.GitRepository) bool {
	return func(o *sourcev1.GitRepository) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) &&
			o.Status.ObservedGeneration == o.Generation &&
			o.Status.Artifact != nil && (revision == "" || o.Status.Artifact.Revision == revision)
	}
}

// hasCondition is a waitFor condition on one condition's status and reason.
func hasCondition(conditionType string, status metav1.ConditionStatus, reason string) func(*sourcev1.GitRepository) bool {
	return func(o *sourcev1.GitRepository) bool {
		c := conditions.Get(o, conditionType)
		return c != nil && c.Status == status && c.Reason == reason
	}
}
