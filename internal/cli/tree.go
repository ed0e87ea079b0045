package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/inventory"
)

// treeFlags are the flags of `windlass tree`.
type treeFlags struct {
	kube   kubeFlags
	output string
}

// treeNode is one object of a tree: a Kustomization's children are the
// objects of its inventory.
type treeNode struct {
	// Kind is the object's kind.
	Kind string `json:"kind" yaml:"kind"`
	// Group is its API group, empty for the core group.
	Group string `json:"group,omitempty" yaml:"group,omitempty"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name" yaml:"name"`
	// Children are the objects a Kustomization applied.
	Children []*treeNode `json:"children,omitempty" yaml:"children,omitempty"`
}

// subject returns the node as "Kind/namespace/name" or "Kind/name".
func (n *treeNode) subject() string {
	return inventory.ObjMetadata{Namespace: n.Namespace, Name: n.Name, Group: n.Group, Kind: n.Kind}.Subject()
}

func newTreeCommand() *cobra.Command {
	f := &treeFlags{}
	cmd := &cobra.Command{Use: "tree", Short: "Show the objects a Kustomization applied, as a tree"}
	f.kube.bind(cmd)
	cmd.PersistentFlags().StringVarP(&f.output, "output", "o", "", "print the tree as yaml or json instead of text")
	cmd.AddCommand(&cobra.Command{
		Use:     "kustomization NAME",
		Aliases: []string{"ks", "kustomizations"},
		Short:   "Show the objects in the inventory of the Kustomization NAME, through the Kustomizations it applies",
		Long: `Show the objects in the inventory (status.inventory) of the Kustomization NAME
as a tree; a Kustomization among them shows the objects of its own
inventory below it, and so on down. With -o yaml or -o json, each node has
kind, group, namespace, name and children.`,
		Example: `  windlass tree kustomization flux-system
  windlass tree ks apps -n flux-system -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, args[0])
		},
	})
	return cmd
}

// run prints the tree of the Kustomization name.
func (f *treeFlags) run(cmd *cobra.Command, name string) error {
	if f.output != "" && f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("-o %q is not a format of tree: use yaml or json, or leave -o out for text", f.output)
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	ks := &kustomizev1.Kustomization{}
	err = c.Get(cmd.Context(), client.ObjectKey{Namespace: f.kube.namespace, Name: name}, ks)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("Kustomization %s/%s not found: check its name and -n", f.kube.namespace, name)
	case err != nil:
		return fmt.Errorf("reading Kustomization %s/%s: %w", f.kube.namespace, name, err)
	}
	root := &treeNode{Kind: kustomizev1.KustomizationKind, Group: kustomizev1.GroupVersion.Group, Namespace: ks.Namespace, Name: ks.Name}
	visited := map[client.ObjectKey]bool{client.ObjectKeyFromObject(ks): true}
	if root.Children, err = inventoryNodes(cmd.Context(), c, ks, visited); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	switch f.output {
	case "json":
		return printStructured(w, "json", root)
	case "yaml":
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(root); err != nil {
			return err
		}
		return enc.Close()
	}
	return printTree(w, root)
}

// inventoryNodes returns the nodes of the inventory of ks, in its order,
// each Kustomization with its own inventory below it. visited holds the
// Kustomizations above, so that a cycle ends.
func inventoryNodes(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, visited map[client.ObjectKey]bool) ([]*treeNode, error) {
	if ks.Status.Inventory == nil {
		return nil, nil
	}
	nodes := make([]*treeNode, 0, len(ks.Status.Inventory.Entries))
	for _, e := range ks.Status.Inventory.Entries {
		id, err := inventory.ParseObjMetadata(e.ID)
		if err != nil {
			return nil, fmt.Errorf("the inventory of Kustomization %s/%s: %w", ks.Namespace, ks.Name, err)
		}
		n := &treeNode{Kind: id.Kind, Group: id.Group, Namespace: id.Namespace, Name: id.Name}
		nodes = append(nodes, n)
		key := client.ObjectKey{Namespace: id.Namespace, Name: id.Name}
		if id.GroupKind() != kustomizationGroupKind || visited[key] {
			continue
		}
		child := &kustomizev1.Kustomization{}
		err = c.Get(ctx, key, child)
		switch {
		case apierrors.IsNotFound(err):
			continue // deleted since: it has nothing below it
		case err != nil:
			return nil, fmt.Errorf("reading Kustomization %s/%s: %w", id.Namespace, id.Name, err)
		}
		visited[key] = true
		n.Children, err = inventoryNodes(ctx, c, child, visited)
		delete(visited, key)
		if err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// printTree writes the tree below root with box-drawing branches.
func printTree(w io.Writer, root *treeNode) error {
	var b strings.Builder
	b.WriteString(root.subject() + "\n")
	writeBranches(&b, root.Children, "")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBranches writes nodes, each line after prefix.
func writeBranches(b *strings.Builder, nodes []*treeNode, prefix string) {
	for i, n := range nodes {
		branch, indent := "├── ", "│   "
		if i == len(nodes)-1 {
			branch, indent = "└── ", "    "
		}
		b.WriteString(prefix + branch + n.subject() + "\n")
		writeBranches(b, n.Children, prefix+indent)
	}
}
