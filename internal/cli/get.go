package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// now is the clock of `get`'s AGE column; tests fix it.
var now = time.Now

// getFlags are the flags of `windlass get`.
type getFlags struct {
	kube           kubeFlags
	allNamespaces  bool
	noHeader       bool
	output         string
	labelSelector  string
	statusSelector string
	watch          bool
}

func newGetCommand() *cobra.Command {
	f := &getFlags{}
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Show the state of sources, Kustomizations, Gates and notifications",
		Long: `Show the Windlass objects of a namespace (-n, default flux-system) or of all
(-A) as a table: their revision, whether they are suspended, whether they
are Ready and why not, and their age; or as YAML or JSON (-o). --watch goes on
printing a row whenever an object changes. ` + "`get gates`" + ` shows whether each gate
is opened and why, and when that next changes. ` + "`get alerts`" + ` and ` + "`get alert-providers`" + `
show what is forwarded where: they have no status (their problems are events,
see ` + "`windlass events --for Alert/NAME`" + `), and ` + "`get all`" + ` leaves them out.`,
		Example: `  windlass get all -A
  windlass get ks --status-selector ready=false
  windlass get sources git -l team=web -o yaml`,
	}
	f.kube.bind(cmd)
	fs := cmd.PersistentFlags()
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace")
	fs.BoolVar(&f.noHeader, "no-header", false, "leave the header line out")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table, yaml or json")
	fs.StringVarP(&f.labelSelector, "label-selector", "l", "", "only the objects whose labels match, e.g. team=web")
	fs.StringVar(&f.statusSelector, "status-selector", "", "only the objects whose condition has this status, e.g. ready=false")
	fs.BoolVarP(&f.watch, "watch", "w", false, "after listing, print a row whenever an object changes, until interrupted")

	var reconciled []objectKind
	for _, k := range objectKinds {
		if !k.static {
			reconciled = append(reconciled, k)
		}
	}
	cmd.AddCommand(f.command("all", nil, "Show every Windlass object that a controller reconciles", true, reconciled...))
	parents := map[string]*cobra.Command{}
	for _, g := range kindGroups {
		group := &cobra.Command{Use: g.plural, Aliases: []string{g.word}, Short: "Show " + g.what}
		group.AddCommand(f.command("all", nil, "Show all "+g.what, true, g.kinds()...))
		cmd.AddCommand(group)
		parents[g.word] = group
	}
	for _, k := range objectKinds {
		parent := cmd
		if group, ok := parents[k.words[0]]; ok && len(k.words) > 1 {
			parent = group
		}
		parent.AddCommand(f.command(k.words[len(k.words)-1], k.aliases, "Show "+pluralKind(k.kind), false, k))
	}
	return cmd
}

// command returns the subcommand that prints the objects of kinds.
func (f *getFlags) command(use string, aliases []string, short string, showKind bool, kinds ...objectKind) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Aliases: aliases,
		Short:   short,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, showKind, kinds)
		},
	}
}

// run lists the objects of kinds and prints them, then watches them when
// asked.
func (f *getFlags) run(cmd *cobra.Command, showKind bool, kinds []objectKind) error {
	match, err := f.filter()
	if err != nil {
		return err
	}
	if f.output != "table" && f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("invalid --output %q: choose table, yaml or json", f.output)
	}
	if f.watch && f.output != "table" {
		return fmt.Errorf("--watch prints table rows: leave -o %s out", f.output)
	}
	c, err := f.kube.watchClient()
	if err != nil {
		return err
	}
	opts := f.listOptions(match)
	var objs []listed
	versions := make([]string, 0, len(kinds))
	for _, k := range kinds {
		l, version, err := listObjects(cmd.Context(), c, k, opts, match)
		if err != nil {
			return err
		}
		objs, versions = append(objs, l...), append(versions, version)
	}
	if f.output != "table" {
		return printObjects(cmd.OutOrStdout(), f.output, objs)
	}
	table := tableOptions{allNamespaces: f.allNamespaces, kinds: showKind, noHeader: f.noHeader}
	if len(objs) == 0 && !f.watch {
		_, err := fmt.Fprintf(cmd.ErrOrStderr(), "no objects found in %s\n", f.where())
		return err
	}
	if len(kinds) == 1 && !showKind && kinds[0].columns != nil {
		return f.runColumns(cmd, c, kinds[0], objs, versions[0], opts, match, table)
	}
	if err := printTable(cmd.OutOrStdout(), rowsOf(objs, now()), table); err != nil {
		return err
	}
	if f.watch {
		return watchRows(cmd.Context(), c, cmd.OutOrStdout(), kinds, versions, opts, match, table)
	}
	return nil
}

// runColumns prints the objects of k, a kind with its own columns, then
// watches them when asked.
func (f *getFlags) runColumns(cmd *cobra.Command, c client.WithWatch, k objectKind, objs []listed, version string,
	opts []client.ListOption, match matcher, table tableOptions) error {
	rows := make([][]string, 0, len(objs))
	for _, l := range objs {
		rows = append(rows, columnRow(k, l.obj, false, table, now()))
	}
	if err := printColumns(cmd.OutOrStdout(), k, rows, table); err != nil {
		return err
	}
	if f.watch {
		return watchColumns(cmd.Context(), c, cmd.OutOrStdout(), k, version, opts, match, table)
	}
	return nil
}

// columnRow returns the cells of obj in the table of its kind k, its age
// counted up to at; gone marks an object deleted while watched.
func columnRow(k objectKind, obj reconcilable, gone bool, o tableOptions, at time.Time) []string {
	var row []string
	if o.allNamespaces {
		row = append(row, obj.GetNamespace())
	}
	cells := k.columns.cells(obj)
	if gone {
		for i := range cells {
			cells[i] = ""
		}
		cells[0] = "Deleted"
	}
	row = append(append(row, obj.GetName()), cells...)
	return append(row, age(obj.GetCreationTimestamp(), at))
}

// printColumns prints rows as an aligned table of the columns of k.
func printColumns(w io.Writer, k objectKind, rows [][]string, o tableOptions) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if !o.noHeader {
		var header []string
		if o.allNamespaces {
			header = append(header, "NAMESPACE")
		}
		header = append(append(append(header, "NAME"), k.columns.header...), "AGE")
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// watchColumns prints a row of the columns of k for every change to its
// objects that match, from the resource version listed, until ctx ends.
func watchColumns(ctx context.Context, c client.WithWatch, w io.Writer, k objectKind, version string,
	opts []client.ListOption, m matcher, table tableOptions) error {
	table.noHeader = true
	return watchChanges(ctx, c, []objectKind{k}, []string{version}, opts, m, func(k objectKind, obj reconcilable, gone bool) error {
		return printColumns(w, k, [][]string{columnRow(k, obj, gone, table, now())}, table)
	})
}

// where names the namespaces the command looks in.
func (f *getFlags) where() string {
	if f.allNamespaces {
		return "any namespace"
	}
	return "namespace " + f.kube.namespace
}

// listOptions are the namespace and label selector of the listing.
func (f *getFlags) listOptions(m matcher) []client.ListOption {
	var opts []client.ListOption
	if !f.allNamespaces {
		opts = append(opts, client.InNamespace(f.kube.namespace))
	}
	if m.labels != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: m.labels})
	}
	return opts
}

// matcher selects objects by label and by condition status.
type matcher struct {
	labels labels.Selector
	// condition and status, from --status-selector: the condition type
	// (matched ignoring case) and its status.
	condition, status string
}

// filter parses the selectors.
func (f *getFlags) filter() (matcher, error) {
	var m matcher
	if f.labelSelector != "" {
		sel, err := labels.Parse(f.labelSelector)
		if err != nil {
			return m, fmt.Errorf("invalid --label-selector %q: %w", f.labelSelector, err)
		}
		m.labels = sel
	}
	if f.statusSelector != "" {
		cond, status, ok := strings.Cut(f.statusSelector, "=")
		if !ok || cond == "" || status == "" {
			return m, fmt.Errorf("invalid --status-selector %q: write CONDITION=STATUS, e.g. ready=false", f.statusSelector)
		}
		m.condition, m.status = cond, status
	}
	return m, nil
}

// matches says whether obj passes the status selector (labels are
// selected by the API server).
func (m matcher) matches(obj reconcilable) bool {
	if m.condition == "" {
		return true
	}
	for _, c := range obj.GetConditions() {
		if strings.EqualFold(c.Type, m.condition) {
			return strings.EqualFold(string(c.Status), m.status)
		}
	}
	return strings.EqualFold(m.status, "unknown")
}

// listed is an object with its kind.
type listed struct {
	kind objectKind
	obj  reconcilable
}

// listObjects returns the objects of kind k that match, by namespace and
// name, and the resource version of the list.
func listObjects(ctx context.Context, c client.Client, k objectKind, opts []client.ListOption, m matcher) ([]listed, string, error) {
	list, all := k.newList()
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, "", listError(pluralKind(k.kind), err)
	}
	var out []listed
	for _, o := range all() {
		if m.matches(o) {
			out = append(out, listed{kind: k, obj: o})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].obj, out[j].obj
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return out, list.GetResourceVersion(), nil
}

// rowsOf returns the table rows of objs, their ages counted up to at.
func rowsOf(objs []listed, at time.Time) []statusRow {
	rows := make([]statusRow, 0, len(objs))
	for _, l := range objs {
		rows = append(rows, rowOf(l.kind.kind, l.obj, l.kind.revision(l.obj), l.obj.IsSuspended(), at))
	}
	return rows
}

// pluralKind returns the plural of a kind for help texts: GitRepositories,
// Kustomizations.
func pluralKind(kind string) string {
	if base, ok := strings.CutSuffix(kind, "y"); ok {
		return base + "ies"
	}
	return kind + "s"
}
