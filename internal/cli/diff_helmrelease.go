package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/helm/drift"
	"github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// diffHelmReleaseFlags are the flags of `windlass diff helmrelease`.
type diffHelmReleaseFlags struct {
	kube   *kubeFlags
	render helmReleaseBuild
}

func newDiffHelmReleaseCommand(kube *kubeFlags) *cobra.Command {
	f := &diffHelmReleaseFlags{kube: kube}
	cmd := &cobra.Command{
		Use:     helmReleaseUse,
		Aliases: helmReleaseAliases,
		Short:   "Compare what the HelmRelease NAME would install with the cluster",
		Long: `Render the HelmRelease NAME as ` + "`windlass build helmrelease`" + ` does, then check every
object with a server-side dry-run apply, as the controller applies it (the
same field manager, owner labels and Helm metadata, forcing ownership, with
your credentials), and print what would change:

  ► Kind/namespace/name created     the object does not exist
  ► Kind/namespace/name drifted     followed by a unified diff, live (-) to applied (+)
  ► Kind/namespace/name deleted     in the HelmRelease's inventory (status.inventory),
                                    no longer rendered, and not kept by the
                                    annotation helm.sh/resource-policy: keep

The diff leaves out managedFields, status, resourceVersion, generation, uid
and timestamps. The values of a Secret are never printed: a key whose value
changed shows as "***" replaced by "*** (changed)".

Exit code: 0 when nothing would change, 1 when something would, 2 when the
diff could not be made.`,
		Example: `  windlass diff helmrelease podinfo -n apps
  windlass diff hr podinfo -n apps --path ./charts/podinfo --values ./prod-values.yaml`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			differs, err := f.run(cmd, args[0])
			return diffOutcome(cmd.OutOrStdout(), differs, err)
		},
	}
	f.render.bind(cmd.Flags())
	return cmd
}

// run prints what installing the render of the HelmRelease name would
// change, and reports whether anything would.
func (f *diffHelmReleaseFlags) run(cmd *cobra.Command, name string) (bool, error) {
	if err := f.render.check(false); err != nil {
		return false, err
	}
	cl, err := newHelmCluster(f.kube)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.render.timeout)
	defer cancel()
	hr, err := f.render.helmRelease(ctx, cl, f.kube.namespace, name)
	if err != nil {
		return false, err
	}
	objs, err := f.render.objects(ctx, cl, hr, cmd.ErrOrStderr())
	if err != nil {
		return false, err
	}
	m, err := ssa.New(cl.c, nil, ssa.Options{FieldManager: release.FieldManager, Owner: drift.Owner(hr)})
	if err != nil {
		return false, err
	}
	plan, err := m.Plan(ctx, objs, ssa.ApplyOptions{Force: true})
	if err != nil {
		return false, fmt.Errorf("the dry-run apply failed: %w", err)
	}
	w := cmd.OutOrStdout()
	differs, err := printChanges(w, plan)
	if err != nil {
		return false, err
	}
	deleted, err := printDeleted(ctx, w, cl.c, drift.Inventory(hr), plan, helmv2.HelmReleaseKind, drift.DeletedByUpgrade)
	return differs || deleted, err
}
