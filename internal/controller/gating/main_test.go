package gating_test

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/controller/gating"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
)

// TestMain runs the gating controller of the real manager against the test
// control plane.
func TestMain(m *testing.M) {
	os.Exit(testmanager.Suite{Env: gating.Env, Controllers: []string{manager.GatingController}}.Run(m))
}
