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
unchanged.

New here? Run ` + "`windlass dev`" + `: it starts a local control plane with a demo
and prints what to try next.`,
		Example: `  windlass dev                   # a local control plane with a demo, no cluster or Docker needed
  windlass get all -A            # what Windlass reconciles, and whether it is Ready
  windlass create source git app --url https://github.com/org/app --branch main
  windlass create kustomization app --source app --path ./deploy --prune
  windlass reconcile kustomization app --with-source`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	// One verb per line, grouped as the README presents them; --help lists
	// them by commandGroups.
	for _, verb := range []*cobra.Command{
		newDevCommand(),
		newUICommand(),
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
		newMonitoringCommand(),
		newDebugCommand(),
	} {
		root.AddCommand(verb)
	}
	groupCommands(root)
	completeObjectNames(root)
	rejectUnknownWords(root)
	explainErrors(root)
	root.SetFlagErrorFunc(flagError)
	return root
}

// Version is the version of this build, set by the linker.
var Version = "dev"

// commandGroups are the headings of the root command's help, each with the
// verbs it lists.
var commandGroups = []struct {
	group *cobra.Group
	verbs []string
}{
	{&cobra.Group{ID: "start", Title: "Getting started:"}, []string{"dev", "ui", "version", "completion", "help"}},
	{&cobra.Group{ID: "look", Title: "Looking at objects:"}, []string{"get", "events", "logs", "tree", "trace", "build", "diff", "export", "list"}},
	{&cobra.Group{ID: "act", Title: "Acting on objects:"}, []string{"create", "reconcile", "suspend", "resume", "gate", "image", "trigger", "delete", "push", "pull", "tag"}},
	{&cobra.Group{ID: "install", Title: "Installing into a cluster:"}, []string{"install", "check", "bootstrap", "uninstall", "controller"}},
	{&cobra.Group{ID: "operate", Title: "Operating Windlass:"}, []string{"monitoring", "debug"}},
}

// groupCommands sorts the root's verbs under commandGroups in its help; a
// verb no group names is listed under "Additional Commands".
func groupCommands(root *cobra.Command) {
	ids := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(g.group)
		for _, verb := range g.verbs {
			ids[verb] = g.group.ID
		}
	}
	for _, verb := range root.Commands() {
		verb.GroupID = ids[verb.Name()]
	}
	root.SetHelpCommandGroupID(ids["help"])
	root.SetCompletionCommandGroupID(ids["completion"])
}
