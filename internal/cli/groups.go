package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// rejectUnknownWords makes every group command (one that only holds
// others, such as `get`, `reconcile source` or `create secret`) fail on a
// word it does not know, with a one-line error that lists the words it
// knows, rather than print its help and exit 0. Without a word it still
// prints its help.
func rejectUnknownWords(root *cobra.Command) {
	for _, verb := range root.Commands() {
		walkCommands(verb, func(cmd *cobra.Command) {
			if cmd.Runnable() || !cmd.HasSubCommands() {
				return
			}
			cmd.Args = cobra.ArbitraryArgs
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return cmd.Help()
				}
				var known []string
				for _, c := range cmd.Commands() {
					if c.IsAvailableCommand() {
						known = append(known, c.Name())
					}
				}
				return fmt.Errorf("unknown kind %q for %q: choose one of %s (see %s --help)",
					args[0], cmd.CommandPath(), strings.Join(known, ", "), cmd.CommandPath())
			}
		})
	}
}
