package gating

import "github.com/windlass-dev/windlass/internal/testutil/testenv"

// env is the test control plane, with the gating controller of the real
// manager running against it (see main_test.go).
var env *testenv.Environment

// Env is where the suite's TestMain stores the control plane.
var Env = &env
