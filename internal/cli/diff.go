package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/kustomization"
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
func printChanges(w io.Writer, plan []ssa.Planned) (bool, error) {
	differs := false
	for _, p := range plan {
		switch p.Action {
		case ssa.ActionCreated:
			fmt.Fprintf(w, "► %s created\n", p.Object.Subject())
			differs = true
		case ssa.ActionConfigured:
			d, err := objectDiff(p.Live, p.Result)
			if err != nil {
				return false, fmt.Errorf("comparing %s: %w", p.Object.Subject(), err)
			}
			if d == "" {
				continue // only the ownership of fields would change
			}
			fmt.Fprintf(w, "► %s drifted\n%s", p.Object.Subject(), d)
			differs = true
		}
	}
	return differs, nil
}

// printPrunes prints the objects of the inventory of ks that are not in
// the plan and that the controller would delete, and reports whether there
// are any.
func printPrunes(ctx context.Context, w io.Writer, c client.Client, ks *kustomizev1.Kustomization, plan []ssa.Planned) (bool, error) {
	if !ks.Spec.Prune || ks.Status.Inventory == nil {
		return false, nil
	}
	owner := kustomization.Owner(ks).Labels()
	return printDeleted(ctx, w, c, kustomization.Inventory(ks), plan, kustomizev1.KustomizationKind, func(live *unstructured.Unstructured) bool {
		return ownedBy(live, owner) && !ssa.PruneDisabled(live)
	})
}

// printDeleted prints the entries of inv, the inventory of an object of
// kind owner, that are not in the plan and whose live object deletes says
// would be deleted, and reports whether there are any.
func printDeleted(ctx context.Context, w io.Writer, c client.Client, inv []inventory.Entry, plan []ssa.Planned, owner string,
	deletes func(live *unstructured.Unstructured) bool) (bool, error) {
	var applied []inventory.Entry
	for _, p := range plan {
		applied = append(applied, inventory.Entry{ID: p.Object.ID(), Version: p.Version})
	}
	deleted := false
	for _, e := range inventory.Diff(inv, applied) {
		live, id, err := readEntry(ctx, c, e)
		if err != nil {
			return false, fmt.Errorf("reading %s, which the %s applied: %w", e.ID, owner, err)
		}
		if live == nil || !deletes(live) {
			continue // gone, or no longer the controller's to delete
		}
		fmt.Fprintf(w, "► %s deleted\n", id.Subject())
		deleted = true
	}
	return deleted, nil
}

// readEntry reads the live object of an inventory entry; nil when it does
// not exist.
func readEntry(ctx context.Context, c client.Client, e inventory.Entry) (*unstructured.Unstructured, inventory.ObjMetadata, error) {
	id, err := e.ObjMetadata()
	if err != nil {
		return nil, id, err
	}
	gvk, _ := e.GroupVersionKind()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err = c.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, live)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, id, nil // gone, or of a kind no longer served
	}
	return live, id, err
}

// ownedBy reports whether obj carries the owner labels.
func ownedBy(obj *unstructured.Unstructured, owner map[string]string) bool {
	labels := obj.GetLabels()
	for k, v := range owner {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// diffIgnoredFields are left out of the objects a diff compares.
var diffIgnoredFields = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"metadata", "uid"},
	{"metadata", "creationTimestamp"},
	{"metadata", "deletionTimestamp"},
	{"metadata", "deletionGracePeriodSeconds"},
	{"metadata", "selfLink"},
	{"status"},
}

// objectDiff returns the unified diff of the YAML of live and desired,
// with the fields that change by themselves left out and Secret values
// masked; "" when they are the same.
func objectDiff(live, desired *unstructured.Unstructured) (string, error) {
	a, b := live.DeepCopy(), desired.DeepCopy()
	for _, o := range []*unstructured.Unstructured{a, b} {
		for _, f := range diffIgnoredFields {
			unstructured.RemoveNestedField(o.Object, f...)
		}
	}
	if isSecret(b) {
		maskSecretPair(a, b)
	}
	ya, err := yaml.Marshal(a.Object)
	if err != nil {
		return "", err
	}
	yb, err := yaml.Marshal(b.Object)
	if err != nil {
		return "", err
	}
	return unifiedDiff(string(ya), string(yb), 3), nil
}

// maskSecretPair masks the values of two versions of a Secret: a value
// that is the same in both is secretMask in both; one that changed is
// secretMask before and secretMask " (changed)" after.
func maskSecretPair(before, after *unstructured.Unstructured) {
	for _, field := range []string{"data", "stringData"} {
		a, _ := before.Object[field].(map[string]any)
		b, _ := after.Object[field].(map[string]any)
		for k, v := range b {
			if old, ok := a[k]; ok && old != v {
				b[k] = secretMask + " (changed)"
			} else {
				b[k] = secretMask
			}
		}
		for k := range a {
			a[k] = secretMask
		}
	}
}

// maxDiffCells bounds the work of a line diff: past it, the whole text is
// shown as replaced.
const maxDiffCells = 4 << 20

// lineEdit is one line of an edit script: ' ' kept, '-' removed, '+'
// added.
type lineEdit struct {
	op   byte
	text string
}

// unifiedDiff returns the changes from a to b as unified diff hunks with
// context lines around each change; "" when a and b are equal.
func unifiedDiff(a, b string, context int) string {
	if a == b {
		return ""
	}
	edits := editScript(splitLines(a), splitLines(b))
	var out strings.Builder
	for _, h := range hunks(edits, context) {
		writeHunk(&out, edits, h[0], h[1])
	}
	return out.String()
}

// splitLines returns the lines of s, without their line ends.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// editScript returns a shortest edit script from x to y, from their
// longest common subsequence of lines.
func editScript(x, y []string) []lineEdit {
	n, m := len(x), len(y)
	if (n+1)*(m+1) > maxDiffCells {
		edits := make([]lineEdit, 0, n+m)
		for _, l := range x {
			edits = append(edits, lineEdit{'-', l})
		}
		for _, l := range y {
			edits = append(edits, lineEdit{'+', l})
		}
		return edits
	}
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	edits := make([]lineEdit, 0, n+m)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			edits = append(edits, lineEdit{' ', x[i]})
			i++
			j++
		case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			edits = append(edits, lineEdit{'-', x[i]})
			i++
		default:
			edits = append(edits, lineEdit{'+', y[j]})
			j++
		}
	}
	return edits
}

// hunks returns the [start, end) ranges of edits that the diff shows: each
// change with up to context kept lines around it, overlapping ranges
// merged.
func hunks(edits []lineEdit, context int) [][2]int {
	var out [][2]int
	for i, e := range edits {
		if e.op == ' ' {
			continue
		}
		start, end := max(i-context, 0), min(i+1+context, len(edits))
		if n := len(out); n > 0 && start <= out[n-1][1] {
			out[n-1][1] = end
			continue
		}
		out = append(out, [2]int{start, end})
	}
	return out
}

// writeHunk writes edits[start:end] as one hunk, with its header.
func writeHunk(w *strings.Builder, edits []lineEdit, start, end int) {
	aStart, bStart := 1, 1
	for _, e := range edits[:start] {
		if e.op != '+' {
			aStart++
		}
		if e.op != '-' {
			bStart++
		}
	}
	aLen, bLen := 0, 0
	for _, e := range edits[start:end] {
		if e.op != '+' {
			aLen++
		}
		if e.op != '-' {
			bLen++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, e := range edits[start:end] {
		w.WriteByte(e.op)
		w.WriteString(e.text)
		w.WriteByte('\n')
	}
}

// hunkRange formats the line range of one side of a hunk as unified diffs
// do: an empty range names the line before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
