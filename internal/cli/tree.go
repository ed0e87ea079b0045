package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/inventory"
)

// treeFlags are the flags of `windlass tree`.
type treeFlags struct {
	kube   kubeFlags
	output string
}

// treeNode is one object of a tree: a Kustomization's or HelmRelease's
// children are the objects of its inventory.
type treeNode struct {
	// Kind is the object's kind.
	Kind string `json:"kind" yaml:"kind"`
	// Group is its API group, empty for the core group.
	Group string `json:"group,omitempty" yaml:"group,omitempty"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name" yaml:"name"`
	// Children are the objects a Kustomization or HelmRelease applied.
	Children []*treeNode `json:"children,omitempty" yaml:"children,omitempty"`
}

// subject returns the node as "Kind/namespace/name" or "Kind/name".
func (n *treeNode) subject() string {
	return inventory.ObjMetadata{Namespace: n.Namespace, Name: n.Name, Group: n.Group, Kind: n.Kind}.Subject()
}

func newTreeCommand() *cobra.Command {
	f := &treeFlags{}
	cmd := &cobra.Command{Use: "tree", Short: "Show the objects a Kustomization or HelmRelease applied, or what an ArtifactGenerator generates, as a tree"}
	f.kube.bind(cmd)
	cmd.PersistentFlags().StringVarP(&f.output, "output", "o", "", "print the tree as yaml or json instead of text")
	cmd.AddCommand(&cobra.Command{
		Use:     "kustomization NAME",
		Aliases: []string{"ks", "kustomizations"},
		Short:   "Show the objects in the inventory of the Kustomization NAME, through the Kustomizations it applies",
		Long: `Show the objects in the inventory (status.inventory) of the Kustomization NAME
as a tree; a Kustomization or HelmRelease among them shows the objects of
its own inventory below it, and so on down. With -o yaml or -o json, each
node has kind, group, namespace, name and children.`,
		Example: `  windlass tree kustomization flux-system
  windlass tree ks apps -n flux-system -o json`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, kustomizationGroupKind, args[0])
		},
	}, &cobra.Command{
		Use:     "helmrelease NAME",
		Aliases: []string{"hr", "helmreleases"},
		Short:   "Show the objects of the release of the HelmRelease NAME, through the Kustomizations and HelmReleases it installs",
		Long: `Show the objects of the release (status.inventory) of the HelmRelease NAME as a
tree; a Kustomization or HelmRelease among them shows the objects of its
own inventory below it, and so on down. With -o yaml or -o json, each node
has kind, group, namespace, name and children.`,
		Example: `  windlass tree helmrelease podinfo
  windlass tree hr podinfo -n apps -o yaml`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, helmReleaseGroupKind, args[0])
		},
	}, f.newTreeArtifactGeneratorCommand())
	return cmd
}

// helmReleaseGroupKind is the group and kind of HelmReleases.
var helmReleaseGroupKind = schema.GroupKind{Group: helmv2.GroupVersion.Group, Kind: helmv2.HelmReleaseKind}

// run prints the tree of the Kustomization or HelmRelease (gk) name.
func (f *treeFlags) run(cmd *cobra.Command, gk schema.GroupKind, name string) error {
	return f.print(cmd, func(ctx context.Context, c client.Client) (*treeNode, error) {
		id := inventory.ObjMetadata{Namespace: f.kube.namespace, Name: name, Group: gk.Group, Kind: gk.Kind}
		inv, found, err := readInventory(ctx, c, id)
		switch {
		case err != nil:
			return nil, err
		case !found:
			return nil, fmt.Errorf("%s %s/%s not found: check its name and -n", gk.Kind, f.kube.namespace, name)
		}
		root := &treeNode{Kind: gk.Kind, Group: gk.Group, Namespace: id.Namespace, Name: name}
		root.Children, err = inventoryNodes(ctx, c, id, inv, map[inventory.ObjMetadata]bool{id: true})
		return root, err
	})
}

// print prints the tree that build returns, in the format of -o.
func (f *treeFlags) print(cmd *cobra.Command, build func(context.Context, client.Client) (*treeNode, error)) error {
	if f.output != "" && f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("-o %q is not a format of tree: use yaml or json, or leave -o out for text", f.output)
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	root, err := build(cmd.Context(), c)
	if err != nil {
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

// readInventory reads the Kustomization or HelmRelease id and returns its
// inventory; found is false when it does not exist.
func readInventory(ctx context.Context, c client.Client, id inventory.ObjMetadata) (*kustomizev1.ResourceInventory, bool, error) {
	key := client.ObjectKey{Namespace: id.Namespace, Name: id.Name}
	hr, ks := &helmv2.HelmRelease{}, &kustomizev1.Kustomization{}
	var obj client.Object = ks
	if id.GroupKind() == helmReleaseGroupKind {
		obj = hr
	}
	err := c.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading %s %s/%s: %w", id.Kind, id.Namespace, id.Name, err)
	case obj == hr:
		return hr.Status.Inventory, true, nil
	}
	return ks.Status.Inventory, true, nil
}

// inventoryNodes returns the nodes of inv, the inventory of owner, in its
// order, each Kustomization and HelmRelease with its own inventory below
// it. visited holds the owners above, so that a cycle ends.
func inventoryNodes(ctx context.Context, c client.Client, owner inventory.ObjMetadata, inv *kustomizev1.ResourceInventory,
	visited map[inventory.ObjMetadata]bool) ([]*treeNode, error) {
	if inv == nil {
		return nil, nil
	}
	nodes := make([]*treeNode, 0, len(inv.Entries))
	for _, e := range inv.Entries {
		id, err := inventory.ParseObjMetadata(e.ID)
		if err != nil {
			return nil, fmt.Errorf("the inventory of %s %s/%s: %w", owner.Kind, owner.Namespace, owner.Name, err)
		}
		n := &treeNode{Kind: id.Kind, Group: id.Group, Namespace: id.Namespace, Name: id.Name}
		nodes = append(nodes, n)
		if gk := id.GroupKind(); gk != kustomizationGroupKind && gk != helmReleaseGroupKind || visited[id] {
			continue
		}
		childInv, found, err := readInventory(ctx, c, id)
		if err != nil {
			return nil, err
		}
		if !found {
			continue // deleted since: it has nothing below it
		}
		visited[id] = true
		n.Children, err = inventoryNodes(ctx, c, id, childInv, visited)
		delete(visited, id)
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
