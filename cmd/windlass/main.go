// Command windlass is the Windlass binary: the controller manager and the
// command line.
package main

import (
	"fmt"
	"os"

	"github.com/windlass-dev/windlass/internal/cli"
)

func main() {
	if err := cli.NewRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
