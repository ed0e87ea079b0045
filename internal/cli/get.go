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
		Short: "Show the state of Windlass objects of any kind",
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
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table, wide (with the reason, and the whole message), yaml or json")
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
	cmd.AddCommand(f.shardsCommand())
	parents := map[string]*cobra.Command{}
	for _, g := range kindGroups {
		group := f.groupCommand(g)
		cmd.AddCommand(group)
		parents[g.word] = group
	}
	for _, k := range objectKinds {
		parent := cmd
		if group, ok := parents[k.words[0]]; ok && len(k.words) > 1 {
			parent = group
		}
		leaf := f.command(k.words[len(k.words)-1]+" [NAME]", k.aliases, "Show "+pluralKind(k.kind)+", or one by its NAME", false, k)
		leaf.ValidArgsFunction = objectNames(k)
		parent.AddCommand(leaf)
	}
	return cmd
}

// groupCommand returns `get sources` (or `get images`): alone, it shows
// every kind of the group, as `get sources all` does.
func (f *getFlags) groupCommand(g kindGroup) *cobra.Command {
	group := &cobra.Command{
		Use: g.plural, Aliases: []string{g.word}, Short: "Show " + g.what,
		Long: "Show " + g.what + ": all of them, or those of the kind named.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownKind(cmd, args[0])
			}
			return f.run(cmd, true, g.kinds(), nil)
		},
	}
	group.AddCommand(f.command("all", nil, "Show all "+g.what, true, g.kinds()...))
	return group
}

// command returns the subcommand that prints the objects of kinds; the
// command of one kind also takes the NAME of one object.
func (f *getFlags) command(use string, aliases []string, short string, showKind bool, kinds ...objectKind) *cobra.Command {
	args := cobra.NoArgs
	if len(kinds) == 1 && !showKind {
		args = optionalNameArg
	}
	return &cobra.Command{
		Use:     use,
		Aliases: aliases,
		Short:   short,
		Args:    args,
		RunE: func(cmd *cobra.Command, names []string) error {
			return f.run(cmd, showKind, kinds, names)
		},
	}
}

// run lists the objects of kinds (or the one named) and prints them, then
// watches them when asked.
func (f *getFlags) run(cmd *cobra.Command, showKind bool, kinds []objectKind, names []string) error {
	match, err := f.filter()
	if err != nil {
		return err
	}
	if err := f.checkOutput(); err != nil {
		return err
	}
	c, err := f.kube.watchClient()
	if err != nil {
		return err
	}
	opts := f.listOptions(match, names)
	var objs []listed
	versions := make([]string, 0, len(kinds))
	for _, k := range kinds {
		l, version, err := listObjects(cmd.Context(), c, k, opts, match)
		if err != nil {
			return err
		}
		objs, versions = append(objs, l...), append(versions, version)
	}
	if len(names) == 1 && len(objs) == 0 && !f.watch {
		return f.missing(cmd, c, kinds[0], names[0])
	}
	if f.output == "yaml" || f.output == "json" {
		if len(names) == 1 {
			return printObject(cmd.OutOrStdout(), f.output, objs[0])
		}
		return printObjects(cmd.OutOrStdout(), f.output, objs)
	}
	table := tableOptions{allNamespaces: f.allNamespaces, kinds: showKind, noHeader: f.noHeader, wide: f.output == "wide"}
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
	if o.wide {
		row = append(row, readyReason(obj))
	}
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
		header = append(append(header, "NAME"), k.columns.header...)
		if o.wide {
			header = append(header, "REASON")
		}
		header = append(header, "AGE")
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

// checkOutput checks -o, and that --watch prints a table.
func (f *getFlags) checkOutput() error {
	switch f.output {
	case "table", "wide", "yaml", "json":
	default:
		return fmt.Errorf("invalid --output %q: choose table, wide, yaml or json", f.output)
	}
	if f.watch && f.output != "table" && f.output != "wide" {
		return fmt.Errorf("--watch prints table rows: leave -o %s out", f.output)
	}
	return nil
}

// missing returns the error of `get KIND NAME` that found nothing: the
// object does not exist, or the selectors leave it out.
func (f *getFlags) missing(cmd *cobra.Command, c client.Client, k objectKind, name string) error {
	ns := f.kube.namespace
	if f.allNamespaces {
		return fmt.Errorf("no %s named %s in any namespace%s", k.kind, name, f.selected())
	}
	if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, k.new()); err != nil {
		return notFound(k.kind, ns, name, err)
	}
	return fmt.Errorf("%s %s/%s does not match%s", k.kind, ns, name, f.selected())
}

// selected names the selectors given, for the errors of `get KIND NAME`.
func (f *getFlags) selected() string {
	var s []string
	if f.labelSelector != "" {
		s = append(s, "-l "+f.labelSelector)
	}
	if f.statusSelector != "" {
		s = append(s, "--status-selector "+f.statusSelector)
	}
	if len(s) == 0 {
		return ""
	}
	return " " + strings.Join(s, " and ")
}

// where names the namespaces the command looks in.
func (f *getFlags) where() string {
	if f.allNamespaces {
		return "any namespace"
	}
	return "namespace " + f.kube.namespace
}

// listOptions are the namespace, label selector and name (of names, at
// most one) of the listing.
func (f *getFlags) listOptions(m matcher, names []string) []client.ListOption {
	var opts []client.ListOption
	if len(names) == 1 {
		opts = append(opts, client.MatchingFields{"metadata.name": names[0]})
	}
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
