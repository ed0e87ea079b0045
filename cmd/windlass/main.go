// Command windlass is the Windlass binary: the controller manager and the
// command line.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/windlass-dev/windlass/internal/cli"
	"github.com/windlass-dev/windlass/internal/workdir"
)

func main() {
	err := cli.NewRootCommand(os.Stdout, os.Stderr).Execute()
	_ = workdir.Remove() // a process that dies instead leaves it to the next sweep
	if err != nil {
		var exit *cli.ExitError
		if errors.As(err, &exit) {
			if exit.Err != nil {
				fmt.Fprintln(os.Stderr, "error:", exit.Err)
			}
			os.Exit(exit.Code)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
