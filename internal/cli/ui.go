package cli

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/internal/devenv"
	"github.com/windlass-dev/windlass/internal/ui"
)

// uiFlags are the flags of `windlass ui`.
type uiFlags struct {
	kube kubeFlags
	addr string
	open bool
}

func newUICommand() *cobra.Command {
	f := &uiFlags{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web UI on this machine, as you, from your kubeconfig",
		Long: `Serve the web UI on a loopback address, reading the cluster of your
kubeconfig as you: it watches the kinds you may list and watch (and says
which it leaves out), in every namespace, or in the one --namespace names.
It opens the UI in your browser, unless --open=false. Ctrl-C stops it.`,
		Example: `  windlass ui
  windlass ui -n team-a --addr 127.0.0.1:9000 --open=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.kube.restConfig()
			if err != nil {
				return err
			}
			namespace := ""
			if cmd.Flags().Changed("namespace") {
				namespace = f.kube.namespace
			}
			ctx, stop := devenv.SignalContext(cmd.Context())
			defer stop()
			out := cmd.OutOrStdout()
			return ui.Local(ctx, cfg, ui.LocalOptions{Addr: f.addr, Namespace: namespace, Log: ctrl.Log.WithName("ui"),
				Ready: func(url string, hidden []string) {
					fmt.Fprintf(out, "Serving the web UI at %s (Ctrl-C stops it)\n", url)
					if len(hidden) > 0 {
						fmt.Fprintf(out, "Left out, as you may not list and watch them here: %s\n", strings.Join(hidden, ", "))
					}
					if f.open {
						openBrowser(url)
					}
				}})
		},
	}
	f.kube.bind(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "addr", "127.0.0.1:9880", "the loopback address to serve the UI on")
	fs.BoolVar(&f.open, "open", true, "open the UI in the browser")
	return cmd
}

// openBrowser opens url in the desktop's browser, when there is one.
func openBrowser(url string) {
	for _, opener := range []string{"xdg-open", "open"} {
		if path, err := exec.LookPath(opener); err == nil {
			cmd := exec.Command(path, url)
			if cmd.Start() == nil {
				go func() { _ = cmd.Wait() }()
			}
			return
		}
	}
}
