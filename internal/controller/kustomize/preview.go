package kustomize

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/plan"
	"github.com/windlass-dev/windlass/internal/ssa"
)

// previewTimeout bounds a preview when the Kustomization's spec.timeout is
// longer.
const previewTimeout = time.Minute

// Preview builds the artifact of the Kustomization key's source as the
// next run would, with its substitutions and decryption, and asks the API
// server, with a server-side dry-run apply as the Kustomization's identity,
// what applying it would change; nothing is written, and the status is not
// touched. Secret values are masked in the diffs.
func (r *KustomizationReconciler) Preview(ctx context.Context, key types.NamespacedName) (*plan.Preview, error) {
	obj := &kustomizev1.Kustomization{}
	if err := r.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, min(obj.GetTimeout(), previewTimeout))
	defer cancel()
	source, err := r.getSource(ctx, obj)
	if err != nil {
		return nil, err
	}
	artifact := source.GetArtifact()
	in, err := r.readInputs(ctx, obj, artifact)
	if err != nil {
		return nil, err
	}
	objs, err := r.buildRevision(ctx, obj, source, in)
	if err != nil {
		return nil, err
	}
	tgt, err := r.target(ctx, obj)
	if err != nil {
		return nil, err
	}
	m, err := r.applyManager(obj, tgt)
	if err != nil {
		return nil, err
	}
	planned, err := m.Plan(ctx, objs, ssa.ApplyOptions{Force: obj.Spec.Force})
	if err != nil {
		return nil, fmt.Errorf("the dry-run apply failed: %w", err)
	}
	changes, err := plan.Changes(planned)
	if err != nil {
		return nil, err
	}
	if obj.Spec.Prune {
		deleted, err := plan.Deletions(ctx, tgt.Client, kspec.Inventory(obj), planned, kustomizev1.KustomizationKind,
			plan.Prunable(kspec.Owner(obj).Labels()))
		if err != nil {
			return nil, err
		}
		changes = append(changes, deleted...)
	}
	return &plan.Preview{Revision: artifact.Revision, Changes: changes, Objects: len(objs)}, nil
}
