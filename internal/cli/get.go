package cli

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// now is the clock of `get`'s AGE column; tests fix it.
var now = time.Now

// getFlags are the flags of `windlass get`.
type getFlags struct {
	kube          kubeFlags
	allNamespaces bool
	noHeader      bool
}

func newGetCommand() *cobra.Command {
	f := &getFlags{}
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Show the state of sources and Kustomizations",
		Long: `Show the Windlass objects of a namespace (-n, default flux-system) or of all
(-A) as a table: their revision, whether they are suspended, whether they
are Ready and why not, and their age.`,
	}
	f.kube.bind(cmd)
	fs := cmd.PersistentFlags()
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace")
	fs.BoolVar(&f.noHeader, "no-header", false, "leave the header line out")

	sources := &cobra.Command{Use: "sources", Aliases: []string{"source"}, Short: "Show sources"}
	cmd.AddCommand(sources, f.command("all", nil, "Show every Windlass object", true, objectKinds...))
	for _, k := range objectKinds {
		parent := cmd
		if k.words[0] == "source" {
			parent = sources
		}
		parent.AddCommand(f.command(k.words[len(k.words)-1], k.aliases, "Show "+k.kind+"s", false, k))
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
			c, err := f.kube.client()
			if err != nil {
				return err
			}
			var opts []client.ListOption
			if !f.allNamespaces {
				opts = append(opts, client.InNamespace(f.kube.namespace))
			}
			var rows []statusRow
			at := now()
			for _, k := range kinds {
				r, err := listRows(cmd.Context(), c, k, opts, at)
				if err != nil {
					return err
				}
				rows = append(rows, r...)
			}
			if len(rows) == 0 {
				where := "namespace " + f.kube.namespace
				if f.allNamespaces {
					where = "any namespace"
				}
				_, err := fmt.Fprintf(cmd.ErrOrStderr(), "no objects found in %s\n", where)
				return err
			}
			return printTable(cmd.OutOrStdout(), rows, tableOptions{allNamespaces: f.allNamespaces, kinds: showKind, noHeader: f.noHeader})
		},
	}
}

// listRows returns the objects of kind k as rows, by namespace and name.
func listRows(ctx context.Context, c client.Client, k objectKind, opts []client.ListOption, at time.Time) ([]statusRow, error) {
	list, all := k.newList()
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, listError(k.kind+"s", err)
	}
	objs := all()
	rows := make([]statusRow, 0, len(objs))
	for _, o := range objs {
		rows = append(rows, rowOf(k.kind, o, k.revision(o), o.IsSuspended(), at))
	}
	return sorted(rows), nil
}

// sorted orders rows by namespace and name.
func sorted(rows []statusRow) []statusRow {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return rows
}

// listError says what to do when a kind cannot be listed.
func listError(kinds string, err error) error {
	return fmt.Errorf("listing %s: %w (are the Windlass CRDs installed in this cluster?)", kinds, err)
}
