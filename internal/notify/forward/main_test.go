package forward

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the control plane that issues and reviews the service-account
// tokens of the event endpoint's tests.
var env *testenv.Environment

// TestMain runs the package's tests against a test control plane.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}
