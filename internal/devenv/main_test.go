package devenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// devChildEnv, when set, makes the test binary run `windlass dev` (the
// demo) with its output on its standard output, as the command line does,
// instead of the tests: the stories run it as a child process.
const devChildEnv = "WINDLASS_DEVENV_TEST_CHILD"

// devChildPathEnv, when set, is the folder the child serves (--path).
const devChildPathEnv = "WINDLASS_DEVENV_TEST_PATH"

// devChildSplitEnv, when set, is the child's --split pattern.
const devChildSplitEnv = "WINDLASS_DEVENV_TEST_SPLIT"

func TestMain(m *testing.M) {
	if os.Getenv(devChildEnv) != "" {
		os.Exit(runDevChild())
	}
	os.Exit(m.Run())
}

// runDevChild runs a dev session until SIGINT or SIGTERM.
func runDevChild() int {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	err := Run(ctx, Options{Out: os.Stdout, Path: os.Getenv(devChildPathEnv), Split: os.Getenv(devChildSplitEnv), Timeout: 3 * time.Minute,
		SyncInterval: 200 * time.Millisecond, Command: "windlass"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "windlass dev:", err)
		return 1
	}
	return 0
}
