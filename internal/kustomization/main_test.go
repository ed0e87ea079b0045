package kustomization

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// env is the package's test control plane, which SubstituteVars reads.
var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env))
}
