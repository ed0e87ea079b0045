package reconcile

import (
	"context"

	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// Step is one step of a kind's run: it reads and sets the conditions it
// owns on obj, shares what it learns with later steps through the run's
// scope S, and returns a Result and an error that say how the run goes on.
// A step can be tested on its own with an object and a scope.
type Step[T any, S any] func(ctx context.Context, obj T, scope *S) (outcome.Result, error)

// RunSteps runs steps in order and stops at the first error. It returns
// the error and the lowest requeuing result of the steps that ran.
func RunSteps[T any, S any](ctx context.Context, obj T, scope *S, steps ...Step[T, S]) (outcome.Result, error) {
	var res outcome.Result
	for _, step := range steps {
		stepRes, err := step(ctx, obj, scope)
		if err != nil {
			return stepRes, err
		}
		res = outcome.LowestRequeuingResult(res, stepRes)
	}
	return res, nil
}
