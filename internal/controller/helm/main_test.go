package helm_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/controller/helm"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
)

// TestMain runs the source and helm controllers of the real manager in one
// process, as `windlass controller` does, with charts handed over in
// process and the dry runs they send counted. The manager serves the web UI too, for the previews of the
// next release, which only the controller can make.
func TestMain(m *testing.M) {
	addrs, err := childproc.FreeAddrs(1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*helm.UIAddr = addrs[0]
	os.Exit(testmanager.Suite{
		Env: helm.Env, Logs: helm.Logs, KubeControllerManager: true,
		Controllers: []string{manager.SourceController, manager.HelmController},
		Wrap:        helm.CountRequests,
		Options:     func(o *manager.Options) { o.UIAddr = addrs[0] },
	}.Run(m))
}
