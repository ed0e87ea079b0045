// Package cli holds the windlass command line: the controller manager, and
// the kubectl-style commands that users run against a cluster.
package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// NewRootCommand returns the windlass command with all its subcommands.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "windlass",
		Short: "Windlass keeps Kubernetes clusters equal to what Git declares",
		Long: `Windlass is a GitOps toolkit for Kubernetes: it fetches what Git repositories
declare, packages it as artifacts, and keeps clusters equal to it. It serves
the GitOps Toolkit APIs (*.toolkit.fluxcd.io), so existing manifests apply
unchanged.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	// One verb per line, grouped as the README presents them; --help lists
	// them alphabetically.
	for _, verb := range []*cobra.Command{
		newDevCommand(),
		newControllerCommand(),
		newVersionCommand(),
		newInstallCommand(),
		newUninstallCommand(),
		newCheckCommand(),
		newBootstrapCommand(),
		newGetCommand(),
		newEventsCommand(),
		newLogsCommand(),
		newTreeCommand(),
		newTraceCommand(),
		newReconcileCommand(),
		newSuspendCommand(),
		newResumeCommand(),
		newGateCommand(),
		newImageCommand(),
		newTriggerCommand(),
		newCreateCommand(),
		newExportCommand(),
		newDeleteCommand(),
		newBuildCommand(),
		newDiffCommand(),
		newPushCommand(),
		newPullCommand(),
		newTagCommand(),
		newListCommand(),
	} {
		root.AddCommand(verb)
	}
	completeObjectNames(root)
	rejectUnknownWords(root)
	explainErrors(root)
	root.SetFlagErrorFunc(flagError)
	return root
}

// Version is the version of this build, set by the linker.
var Version = "dev"
