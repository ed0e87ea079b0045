package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deleteFlags are the flags of `delete`.
type deleteFlags struct {
	verbFlags
	// silent deletes without asking.
	silent bool
}

func newDeleteCommand() *cobra.Command {
	f := &deleteFlags{}
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete Windlass objects of any kind, and wait until they are gone",
		Long: `Delete an object after asking for confirmation (unless --silent), and wait
until it is gone: its controller first runs its finalizers (a Kustomization
with prune deletes what it applied, a HelmRelease uninstalls its release);
a source goes at once, and its controller then deletes its artifacts.`,
		Example: `  windlass delete kustomization app
  windlass delete source git app -n apps --silent
  windlass delete helmrelease redis --timeout 2m`,
	}
	f.bindWaiting(cmd)
	cmd.PersistentFlags().BoolVarP(&f.silent, "silent", "s", false, "delete without asking for confirmation")
	addKindCommands(cmd, func(k objectKind) *cobra.Command {
		return &cobra.Command{
			Use:     k.use("NAME"),
			Short:   "Delete a " + k.kind,
			Example: kindExamples("delete", k, "app", "app -n apps --silent"),
			Args:    nameArg,
			RunE: func(cmd *cobra.Command, args []string) error {
				return f.delete(cmd, k, args[0])
			},
		}
	})
	return cmd
}

// delete deletes the object name of kind k once the user agrees, and
// waits until it is gone.
func (f *deleteFlags) delete(cmd *cobra.Command, k objectKind, name string) error {
	if f.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	obj, err := f.get(ctx, c, k, name)
	cancel()
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s does not exist: nothing to delete", k.kind, f.kube.namespace, name)
	}
	if err != nil {
		return err
	}
	if !f.silent {
		if err := confirm(cmd.InOrStdin(), w, k.describe(obj)); err != nil {
			return err
		}
	}
	// The timeout counts from the answer, not while the user thinks.
	ctx, cancel = context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return f.deleteAndWait(ctx, c, w, k, obj)
}

// confirm asks whether to delete what and returns an error unless the
// answer is yes.
func confirm(in io.Reader, w io.Writer, what string) error {
	fmt.Fprintf(w, "Are you sure you want to delete %s? [y/N] ", what)
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(w)
		return fmt.Errorf("%s was not deleted: no answer on the standard input (pass --silent to delete without asking)", what)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%s was not deleted: the answer was not yes", what)
}

// deleteAndWait deletes obj and waits until it is gone.
func (f *deleteFlags) deleteAndWait(ctx context.Context, c client.Client, w io.Writer, k objectKind, obj reconcilable) error {
	desc := k.describe(obj)
	err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(w, "✔ %s deleted\n", desc)
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s: %w", desc, err)
	}
	fmt.Fprintf(w, "► deleting %s\n", desc)
	latest := k.new()
	err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), latest)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("%s is still there after %s, waiting for its finalizers %v: is its controller running?",
			desc, f.timeout, latest.GetFinalizers())
	}
	fmt.Fprintf(w, "✔ %s deleted\n", desc)
	return nil
}
