package helm_test

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/controller/helm"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
)

// TestMain runs the source and helm controllers of the real manager in one
// process, as `windlass controller` does, with charts handed over in
// process.
func TestMain(m *testing.M) {
	os.Exit(testmanager.Suite{
		Env: helm.Env, Logs: helm.Logs, KubeControllerManager: true,
		Controllers: []string{manager.SourceController, manager.HelmController},
	}.Run(m))
}
