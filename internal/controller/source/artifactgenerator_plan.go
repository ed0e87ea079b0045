package source

import (
	"errors"
	"fmt"

	"github.com/windlass-dev/windlass/api/meta"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/generator"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// planArtifacts returns the artifacts obj generates from the sources'
// trees (generator.Plan). What the spec and the folders make invalid
// stalls until either changes; a pattern that matches no folder fails, and
// the artifacts generated before stay.
func planArtifacts(obj *sourceextv1beta1.ArtifactGenerator, trees map[string]string) ([]generator.Planned, error) {
	plan, err := generator.Plan(obj.Spec, trees)
	switch {
	case errors.Is(err, generator.ErrNoFolder):
		return nil, outcome.Fail(meta.BuildFailedReason, fmt.Errorf("%w: the artifacts generated before stay", err))
	case err != nil:
		return nil, outcome.Stall(sourceextv1beta1.ValidationFailedReason, err)
	}
	return plan, nil
}
