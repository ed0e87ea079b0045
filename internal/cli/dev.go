package cli

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/devenv"
)

func newDevCommand() *cobra.Command {
	o := devenv.Options{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run Windlass locally with a demo, no cluster needed",
		Long: `Start a local control plane (etcd, kube-apiserver and kube-controller-manager,
built from Go modules the first time, then cached), run every Windlass
controller in this process, serve a demo Git repository on loopback, and
deploy it with a GitRepository and two Kustomizations. With --path DIR the
folder DIR is served instead, committed again whenever a file in it changes.
With --split PATTERN as well (like apps/{app}), DIR is decomposed as a
monorepo: an ArtifactGenerator makes one artifact per folder the pattern
matches, each applied by a Kustomization of its own (created and deleted as
folders come and go), so that an edit applies only the folders it changed.

Everything listens on 127.0.0.1. Ctrl-C stops everything. It needs Go (to build
the control plane once) and git.`,
		Example: `  windlass dev
  windlass dev --path ./deploy --kubeconfig-out ./dev.kubeconfig
  windlass dev --path . --split 'apps/{app}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := devenv.SignalContext(cmd.Context())
			defer stop()
			o.Out = cmd.OutOrStdout()
			o.Terminal = term.IsTerminal(o.Out)
			o.Command = commandName()
			o.Version = Version
			return devenv.Run(ctx, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.KubeconfigOut, "kubeconfig-out", "", "where to write the kubeconfig of the local cluster (default: dev/kubeconfig in the windlass cache folder)")
	fs.StringVar(&o.Path, "path", "", "serve this folder of manifests instead of the demo, committing it whenever a file changes")
	fs.StringVar(&o.Split, "split", "", "with --path: one artifact and one Kustomization per folder this pattern matches, like apps/{app}")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for the objects to become Ready")
	fs.DurationVar(&o.SyncInterval, "sync-interval", time.Second, "how often --path is checked for changes")
	return cmd
}

// commandName is how the user ran windlass, for the hints the commands
// print: "windlass" when it is on the PATH, else the path they typed.
func commandName() string {
	name := os.Args[0]
	if !strings.ContainsRune(name, os.PathSeparator) {
		return name
	}
	if rel, err := filepath.Rel(".", name); err == nil && !strings.HasPrefix(rel, "..") {
		return "./" + rel
	}
	return name
}
