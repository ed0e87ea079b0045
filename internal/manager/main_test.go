package manager

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the control plane of the tests that run managers.
var env *testenv.Environment

// logs is what the package's managers log.
var logs *testutil.Logs

// TestMain runs the package's tests against a test control plane. The
// logs are captured first: controller-runtime keeps the first logger it
// is given, or none for good 30 s after the process started.
func TestMain(m *testing.M) {
	logs = testutil.CaptureLogs()
	os.Exit(testenv.Run(m, &env))
}
