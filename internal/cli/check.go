package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/windlass-dev/windlass/internal/devenv"
	"github.com/windlass-dev/windlass/internal/install"
)

// checkFlags are the flags of `windlass check`.
type checkFlags struct {
	kube    kubeFlags
	pre     bool
	timeout time.Duration
}

func newCheckCommand() *cobra.Command {
	f := &checkFlags{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that a cluster can run Windlass, or that Windlass runs",
		Long: `Check the cluster, one line per check, ✔ or ✗ with what to do; the exit code
is not zero when a check fails.

With --pre, before an install: the Kubernetes version (at least ` + install.MinKubernetesVersion + `), and
whether you may create CRDs, ClusterRoles and Deployments. Without it, after
an install: the Kubernetes version, the CRDs (there, Established, serving
the versions this client knows) and the controllers' Deployments (Available).`,
		Example: `  windlass check --pre
  windlass check -n flux-system`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	f.kube.bind(cmd)
	cmd.Flags().BoolVar(&f.pre, "pre", false, "check the prerequisites of an install only")
	cmd.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "how long the checks may take")
	return cmd
}

func (f *checkFlags) run(cmd *cobra.Command) error {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return err
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	w := cmd.OutOrStdout()
	fmt.Fprintln(w, "► checking the cluster")
	failed := writeChecks(w, []install.Check{versionCheck(cfg)})
	if f.pre {
		fmt.Fprintln(w, "► checking your permissions")
		failed += writeChecks(w, install.AccessChecks(ctx, c, f.kube.namespace))
	} else {
		fmt.Fprintln(w, "► checking the CRDs")
		crds, err := install.CRDChecks(ctx, c, f.kube.namespace)
		if err != nil {
			return err
		}
		failed += writeChecks(w, crds)
		fmt.Fprintln(w, "► checking the controllers")
		if dev, ok := f.kube.devRun(cfg); ok {
			failed += writeChecks(w, []install.Check{devCheck(dev)})
		} else {
			failed += writeChecks(w, install.DeploymentChecks(ctx, c, f.kube.namespace))
		}
	}
	switch failed {
	case 0:
		fmt.Fprintln(w, "✔ all checks passed")
		return nil
	case 1:
		return fmt.Errorf("1 check failed")
	}
	return fmt.Errorf("%d checks failed", failed)
}

// devCheck says that the controllers of a windlass dev cluster run in
// windlass dev, not in Deployments.
func devCheck(dev devenv.Record) install.Check {
	return install.Check{OK: true, Message: fmt.Sprintf("controllers run in windlass dev (pid %d), not in a Deployment; their log: %s", dev.PID, dev.Log)}
}

// versionCheck checks the Kubernetes version of the cluster behind cfg.
func versionCheck(cfg *rest.Config) install.Check {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return install.Check{Message: "cannot reach the cluster", Fix: err.Error()}
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return install.Check{Message: "cannot read the Kubernetes version", Fix: err.Error()}
	}
	return install.VersionCheck(info)
}

// writeChecks prints each check on its own line and returns how many
// failed.
func writeChecks(w io.Writer, checks []install.Check) (failed int) {
	for _, c := range checks {
		fmt.Fprintln(w, c.String())
		if !c.OK {
			failed++
		}
	}
	return failed
}
