package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/plan"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// ExitError ends a command with the exit code Code. With Err nil it is no
// failure and nothing more is to be printed: `windlass diff` returns
// Code 1 when the cluster differs from the build. With Err set the command
// failed, and Err says why: diff returns Code 2 then.
type ExitError struct {
	// Code is the process's exit code.
	Code int
	// Err is the failure, or nil.
	Err error
}

// Error returns the failure's message, or the exit code.
func (e *ExitError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Unwrap returns the failure.
func (e *ExitError) Unwrap() error {
	return e.Err
}

// Exit codes of diff.
const (
	diffDiffers = 1
	diffFailed  = 2
)

// diffFlags are the flags of `windlass diff`.
type diffFlags struct {
	localVerb
}

func newDiffCommand() *cobra.Command {
	f := &diffFlags{}
	leaf := &cobra.Command{
		Short: "Compare the build of the folder --path with the cluster, for the Kustomization NAME",
		Long: `Build the folder --path as ` + "`windlass build kustomization`" + ` does, then check every
object with a server-side dry-run apply, as the controller applies it (the
same field manager, owner labels and policies, with your credentials), and
print what would change:

  ► Kind/namespace/name created     the object does not exist
  ► Kind/namespace/name drifted     followed by a unified diff, live (-) to applied (+)
  ► Kind/namespace/name deleted     in the Kustomization's inventory, not in the build,
                                    and pruned (spec.prune)

The diff leaves out managedFields, status, resourceVersion, generation, uid
and timestamps. The values of a Secret are never printed: a key whose value
changed shows as "***" replaced by "*** (changed)".

Exit code: 0 when nothing would change, 1 when something would, 2 when the
diff could not be made.`,
		Example: `  windlass diff kustomization apps --path ./clusters/prod/apps`,
		RunE: func(cmd *cobra.Command, args []string) error {
			differs, err := f.run(cmd, args[0])
			return diffOutcome(cmd.OutOrStdout(), differs, err)
		},
	}
	return addSubcommands(f.command("diff", "Show what applying a local folder would change in the cluster", leaf), newDiffArtifactCommand(),
		newDiffHelmReleaseCommand(&f.kube))
}

// isTerminal says whether w is a terminal; tests replace it.
var isTerminal = term.IsTerminal

// diffOutcome returns the exit of a diff: failed, differs, or the same,
// which a terminal is told (a script gets no output and exit code 0).
func diffOutcome(w io.Writer, differs bool, err error) error {
	switch {
	case err != nil:
		return &ExitError{Code: diffFailed, Err: err}
	case differs:
		return &ExitError{Code: diffDiffers}
	}
	if isTerminal(w) {
		_, err = fmt.Fprintln(w, "✔ no changes")
	}
	return err
}

// run prints what applying the build of name would change, and reports
// whether anything would.
func (f *diffFlags) run(cmd *cobra.Command, name string) (bool, error) {
	if err := f.local.check(); err != nil {
		return false, err
	}
	c, err := f.kube.client()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.local.timeout)
	defer cancel()
	ks, err := f.local.kustomization(ctx, c, f.kube.namespace, name)
	if err != nil {
		return false, err
	}
	objs, err := f.local.objects(ctx, c, ks, cmd.ErrOrStderr())
	if err != nil {
		return false, err
	}
	m, err := ssa.New(c, nil, ssa.Options{FieldManager: kustomization.FieldManager, Owner: kustomization.Owner(ks)})
	if err != nil {
		return false, err
	}
	plan, err := m.Plan(ctx, objs, ssa.ApplyOptions{Force: ks.Spec.Force})
	if err != nil {
		return false, fmt.Errorf("the dry-run apply failed: %w", err)
	}
	w := cmd.OutOrStdout()
	differs, err := printChanges(w, plan)
	if err != nil {
		return false, err
	}
	deleted, err := printPrunes(ctx, w, c, ks, plan)
	return differs || deleted, err
}

// printChanges prints the objects that the apply would create or change,
// and reports whether there are any.
func printChanges(w io.Writer, planned []ssa.Planned) (bool, error) {
	changes, err := plan.Changes(planned)
	if err != nil {
		return false, err
	}
	printPlan(w, changes)
	return len(changes) > 0, nil
}

// printPlan prints each change: its subject and action, and a drifted
// object's diff.
func printPlan(w io.Writer, changes []plan.Change) {
	for _, c := range changes {
		fmt.Fprintf(w, "► %s %s\n%s", c.Subject, c.Action, c.Diff)
	}
}

// printPrunes prints the objects of the inventory of ks that are not in
// the plan and that the controller would delete, and reports whether there
// are any.
func printPrunes(ctx context.Context, w io.Writer, c client.Client, ks *kustomizev1.Kustomization, planned []ssa.Planned) (bool, error) {
	if !ks.Spec.Prune || ks.Status.Inventory == nil {
		return false, nil
	}
	return printDeleted(ctx, w, c, kustomization.Inventory(ks), planned, kustomizev1.KustomizationKind,
		plan.Prunable(kustomization.Owner(ks).Labels()))
}

// printDeleted prints the entries of inv, the inventory of an object of
// kind owner, that are not in the plan and whose live object deletes says
// would be deleted, and reports whether there are any.
func printDeleted(ctx context.Context, w io.Writer, c client.Client, inv []inventory.Entry, planned []ssa.Planned, owner string,
	deletes func(live *unstructured.Unstructured) bool) (bool, error) {
	deleted, err := plan.Deletions(ctx, c, inv, planned, owner, deletes)
	if err != nil {
		return false, err
	}
	printPlan(w, deleted)
	return len(deleted) > 0, nil
}
