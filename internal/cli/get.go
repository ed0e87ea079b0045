package cli

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// now is the clock of `get`'s AGE column; tests fix it.
var now = time.Now

// getFlags are the flags of `windlass get`.
type getFlags struct {
	kube          kubeFlags
	allNamespaces bool
	noHeader      bool
}

// lister lists the objects of one kind as rows.
type lister func(ctx context.Context, c client.Client, opts []client.ListOption, at time.Time) ([]statusRow, error)

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
	sources.AddCommand(f.command("git", []string{"gitrepository", "gitrepositories"}, "Show GitRepositories", false, listGitRepositories))
	cmd.AddCommand(sources,
		f.command("kustomizations", []string{"kustomization", "ks"}, "Show Kustomizations", false, listKustomizations),
		f.command("all", nil, "Show every Windlass object", true, listGitRepositories, listKustomizations))
	return cmd
}

// command returns the subcommand that prints the rows of listers.
func (f *getFlags) command(use string, aliases []string, short string, kinds bool, listers ...lister) *cobra.Command {
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
			for _, list := range listers {
				r, err := list(cmd.Context(), c, opts, at)
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
			return printTable(cmd.OutOrStdout(), rows, tableOptions{allNamespaces: f.allNamespaces, kinds: kinds, noHeader: f.noHeader})
		},
	}
}

func listGitRepositories(ctx context.Context, c client.Client, opts []client.ListOption, at time.Time) ([]statusRow, error) {
	var list sourcev1.GitRepositoryList
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, listError("GitRepositories", err)
	}
	rows := make([]statusRow, 0, len(list.Items))
	for i := range list.Items {
		o := &list.Items[i]
		revision := ""
		if a := o.Status.Artifact; a != nil {
			revision = a.Revision
		}
		rows = append(rows, rowOf("GitRepository", o, revision, o.Spec.Suspend, at))
	}
	return sorted(rows), nil
}

func listKustomizations(ctx context.Context, c client.Client, opts []client.ListOption, at time.Time) ([]statusRow, error) {
	var list kustomizev1.KustomizationList
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, listError("Kustomizations", err)
	}
	rows := make([]statusRow, 0, len(list.Items))
	for i := range list.Items {
		o := &list.Items[i]
		rows = append(rows, rowOf("Kustomization", o, o.Status.LastAppliedRevision, o.Spec.Suspend, at))
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
