package source_test

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/controller/source"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
)

// TestMain runs the source controller of the real manager against the test
// control plane, with its storage served on a loopback port and limits that
// the tests reach.
func TestMain(m *testing.M) {
	os.Exit(testmanager.Suite{
		Env: source.Env, Logs: source.Logs,
		Controllers: []string{manager.SourceController},
		Options: func(opts *manager.Options) {
			opts.Source.GitCloneMaxSize = source.MaxCloneSize
			opts.Source.FetchMaxSize = source.MaxFetchSize
			opts.Source.HelmIndexMaxSize = source.MaxHelmIndexSize
			opts.Source.HelmChartFileMaxSize = source.MaxHelmChartFile
		},
		Started: func(mgr *manager.Manager, _ manager.Options) error {
			*source.Storage, *source.K8s, *source.HelmIndexes = mgr.Storage, mgr.GetClient(), mgr.HelmIndexes
			return nil
		},
	}.Run(m))
}
