package kustomize_test

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/controller/kustomize"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
)

// TestMain runs the source and kustomize controllers of the real manager
// in one process, as `windlass controller` does, with artifacts handed
// over in process and the dry runs they send counted.
func TestMain(m *testing.M) {
	os.Exit(testmanager.Suite{
		Env: kustomize.Env, Logs: kustomize.Logs, KubeControllerManager: true,
		Controllers: []string{manager.SourceController, manager.KustomizeController},
		Wrap:        kustomize.CountDryRuns,
	}.Run(m))
}
