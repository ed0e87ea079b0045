package helm

import (
	"time"

	hrelease "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// The Helm actions, in the action label of the Helm action metrics (see
// helmAction); install and upgrade are helmv2.ReleaseActionInstall and
// helmv2.ReleaseActionUpgrade.
const (
	actionTest      = "test"
	actionRollback  = "rollback"
	actionUninstall = "uninstall"
)

// helmAction runs run, the Helm action named action (install, upgrade,
// test, rollback or uninstall), and records its duration and whether it
// failed in the Helm action metrics.
func helmAction(action string, run func() (*hrelease.Release, error)) (*hrelease.Release, error) {
	start := time.Now()
	rel, err := run()
	metrics.RecordHelmAction(action, start, err)
	return rel, err
}

// recordDriftCorrected records the objects that a drift correction wrote
// back (created or configured), as changes says, even when it failed
// half-way.
func recordDriftCorrected(changes *ssa.ChangeSet) {
	if changes == nil {
		return
	}
	n := 0
	for _, c := range changes.Entries {
		if c.Action == ssa.ActionCreated || c.Action == ssa.ActionConfigured {
			n++
		}
	}
	metrics.RecordDriftCorrected(helmv2.HelmReleaseKind, n)
}
