package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/inventory"
)

// newTreeArtifactGeneratorCommand returns `tree artifactgenerator`.
func (f *treeFlags) newTreeArtifactGeneratorCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "artifactgenerator NAME",
		Aliases: []string{"ag", "artifactgenerators"},
		Short:   "Show the ExternalArtifacts the ArtifactGenerator NAME generates, what uses each, and what they applied",
		Long: `Show the ExternalArtifacts in the inventory of the ArtifactGenerator NAME as a
tree; below each, the Kustomizations and HelmReleases of its namespace that
use it (spec.sourceRef, spec.chartRef), each with the objects it applied.`,
		Example: `  windlass tree artifactgenerator apps -n platform`,
		Args:    nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.print(cmd, func(ctx context.Context, c client.Client) (*treeNode, error) {
				return generatorTree(ctx, c, f.kube.namespace, args[0])
			})
		},
	}
}

// generatorTree returns the tree of the generator name of namespace ns.
func generatorTree(ctx context.Context, c client.Client, ns, name string) (*treeNode, error) {
	gen := &sourceextv1beta1.ArtifactGenerator{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gen); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("ArtifactGenerator %s/%s not found: check its name and -n", ns, name)
		}
		return nil, err
	}
	root := &treeNode{Kind: sourceextv1beta1.ArtifactGeneratorKind, Group: sourceextv1beta1.GroupVersion.Group, Namespace: ns, Name: name}
	var kss kustomizev1.KustomizationList
	var hrs helmv2.HelmReleaseList
	if err := c.List(ctx, &kss, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	if err := c.List(ctx, &hrs, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, e := range gen.Status.Inventory {
		ea := &treeNode{Kind: sourcev1.ExternalArtifactKind, Group: sourcev1.GroupVersion.Group, Namespace: e.Namespace, Name: e.Name}
		root.Children = append(root.Children, ea)
		for _, k := range kss.Items {
			if ref := k.Spec.SourceRef; ref.Kind == sourcev1.ExternalArtifactKind && ref.Name == e.Name && (ref.Namespace == "" || ref.Namespace == e.Namespace) {
				n, err := applierNode(ctx, c, kustomizationGroupKind.Group, kustomizationGroupKind.Kind, k.Namespace, k.Name)
				if err != nil {
					return nil, err
				}
				ea.Children = append(ea.Children, n)
			}
		}
		for _, hr := range hrs.Items {
			if ref := hr.Spec.ChartRef; ref != nil && ref.Kind == sourcev1.ExternalArtifactKind && ref.Name == e.Name && (ref.Namespace == "" || ref.Namespace == e.Namespace) {
				n, err := applierNode(ctx, c, helmReleaseGroupKind.Group, helmReleaseGroupKind.Kind, hr.Namespace, hr.Name)
				if err != nil {
					return nil, err
				}
				ea.Children = append(ea.Children, n)
			}
		}
	}
	return root, nil
}

// applierNode returns the node of a Kustomization or HelmRelease, with the
// objects it applied below it.
func applierNode(ctx context.Context, c client.Client, group, kind, ns, name string) (*treeNode, error) {
	id := inventory.ObjMetadata{Namespace: ns, Name: name, Group: group, Kind: kind}
	n := &treeNode{Kind: kind, Group: group, Namespace: ns, Name: name}
	inv, found, err := readInventory(ctx, c, id)
	if err != nil || !found {
		return n, err
	}
	n.Children, err = inventoryNodes(ctx, c, id, inv, map[inventory.ObjMetadata]bool{id: true})
	return n, err
}
