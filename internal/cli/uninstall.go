package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/windlass-dev/windlass/internal/install"
)

// uninstallFlags are the flags of `windlass uninstall`.
type uninstallFlags struct {
	kube          kubeFlags
	deleteApplied bool
	silent        bool
	dryRun        bool
	keepNamespace bool
	keepCRDs      bool
	timeout       time.Duration
}

func newUninstallCommand() *cobra.Command {
	f := &uninstallFlags{}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove Windlass from a cluster, leaving what it applied in place",
		Long: `Remove the Windlass installation of the namespace: its Deployments (waiting
until their pods are gone), then the finalizers of every Windlass object, so
that nothing the Kustomizations applied is pruned and no Helm release is
uninstalled, then the Service, NetworkPolicy, RBAC, the CRDs (and with them
every Windlass object) and the namespace.

--delete-applied deletes the Kustomizations and HelmReleases first instead,
while the controllers still run, and waits until they have deleted what they
applied and uninstalled the releases.
--keep-crds keeps the CRDs and the Windlass objects; only those of the
namespace lose their finalizers (another installation may serve the others).
It asks before it starts, unless --silent; --dry-run says what it would do.`,
		Example: `  windlass uninstall --dry-run
  windlass uninstall --silent
  windlass uninstall --delete-applied
  windlass uninstall -n gitops --keep-namespace --keep-crds`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	f.kube.bind(cmd)
	fs := cmd.Flags()
	fs.BoolVar(&f.deleteApplied, "delete-applied", false, "delete the Kustomizations and HelmReleases first, and with them what they applied")
	fs.BoolVarP(&f.silent, "silent", "s", false, "do not ask for confirmation")
	fs.BoolVar(&f.dryRun, "dry-run", false, "say what would be deleted, and delete nothing")
	fs.BoolVar(&f.keepNamespace, "keep-namespace", false, "keep the namespace")
	fs.BoolVar(&f.keepCRDs, "keep-crds", false, "keep the CRDs and the Windlass objects of other namespaces")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long each wait may last")
	return cmd
}

func (f *uninstallFlags) run(cmd *cobra.Command) error {
	if f.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	ns := f.kube.namespace
	if !f.dryRun && !f.silent {
		ok, err := askUninstall(cmd.InOrStdin(), cmd.ErrOrStderr(), f.question())
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("Windlass was not uninstalled: the answer was not yes")
		}
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	verb := "uninstalling"
	if f.dryRun {
		verb = "uninstalling (dry run)"
	}
	fmt.Fprintf(w, "► %s Windlass from namespace %s\n", verb, ns)
	err = install.Uninstall(cmd.Context(), c, install.UninstallOptions{
		Namespace: ns, KeepNamespace: f.keepNamespace, KeepCRDs: f.keepCRDs, DeleteApplied: f.deleteApplied,
		DryRun: f.dryRun, Timeout: f.timeout, Progress: func(line string) { fmt.Fprintln(w, line) },
	})
	if err != nil {
		return err
	}
	if !f.dryRun {
		fmt.Fprintf(w, "✔ Windlass uninstalled from %s\n", ns)
	}
	return nil
}

// question is what uninstall asks before it starts.
func (f *uninstallFlags) question() string {
	what := "the Windlass controllers of namespace " + f.kube.namespace
	if !f.keepCRDs {
		what += ", the CRDs with every Windlass object of the cluster"
	}
	if !f.keepNamespace {
		what += ", and the namespace " + f.kube.namespace
	}
	applied := "what the Kustomizations and HelmReleases applied stays"
	if f.deleteApplied {
		applied = "the Kustomizations and HelmReleases delete what they applied first"
	}
	return fmt.Sprintf("Delete %s (%s)?", what, applied)
}

// askUninstall asks question on out and reads a yes or no from in.
func askUninstall(in io.Reader, out io.Writer, question string) (bool, error) {
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		fmt.Fprintln(out)
		return false, errors.New("Windlass was not uninstalled: no answer on the standard input (pass --silent to uninstall without asking)")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
