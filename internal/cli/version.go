package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/windlass-dev/windlass/internal/install"
)

// versionFlags are the flags of `windlass version`.
type versionFlags struct {
	kube       kubeFlags
	clientOnly bool
	timeout    time.Duration
}

func newVersionCommand() *cobra.Command {
	f := &versionFlags{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of windlass, and of the controllers in the cluster",
		Long: `Print the version of this client and, when Windlass is installed in the
namespace, the version of its controllers (the tag of their image), or of the
windlass dev whose cluster it is. It does not fail when the cluster cannot be
reached or Windlass is not installed.`,
		Example: `  windlass version                  # this client, and the controllers of the current cluster
  windlass version --client         # this client only, without reaching a cluster
  windlass version -n windlass-sys  # Windlass installed in another namespace`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	f.kube.bind(cmd)
	cmd.Flags().BoolVar(&f.clientOnly, "client", false, "print the client's version only")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for the cluster")
	return cmd
}

func (f *versionFlags) run(cmd *cobra.Command) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "client: %s\n", Version)
	if f.clientOnly {
		return nil
	}
	fmt.Fprintf(w, "controller: %s\n", f.controllerVersion(cmd.Context()))
	return nil
}

// controllerVersion returns the image tag of the Windlass Deployments of
// the namespace, "not installed", or why it is unknown.
func (f *versionFlags) controllerVersion(ctx context.Context) string {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return "unknown (no cluster to talk to)"
	}
	if dev, ok := f.kube.devRun(cfg); ok {
		return fmt.Sprintf("%s (controllers run in windlass dev, pid %d)", cmp.Or(dev.Version, "unknown"), dev.PID)
	}
	c, err := f.kube.client()
	if err != nil {
		return "unknown (no cluster to talk to)"
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	deployments, err := install.InstalledDeployments(ctx, c, f.kube.namespace)
	if err != nil {
		return "unknown (" + firstLine(err.Error()) + ")"
	}
	if len(deployments) == 0 {
		return "not installed"
	}
	tags := map[string][]string{}
	var order []string
	for i := range deployments {
		tag := install.ImageTag(install.ImageOf(&deployments[i]))
		if _, ok := tags[tag]; !ok {
			order = append(order, tag)
		}
		tags[tag] = append(tags[tag], deployments[i].Name)
	}
	if len(order) == 1 {
		return order[0]
	}
	parts := make([]string, 0, len(order))
	for _, tag := range order {
		parts = append(parts, fmt.Sprintf("%s (%s)", tag, strings.Join(tags[tag], ", ")))
	}
	return strings.Join(parts, ", ")
}
