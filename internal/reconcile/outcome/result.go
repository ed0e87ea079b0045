package outcome

// Result is the outcome of one reconcile step.
type Result int

const (
	// ResultEmpty means the step has nothing to say about the outcome.
	ResultEmpty Result = iota
	// ResultRequeue asks for another run soon, without it being a failure.
	ResultRequeue
	// ResultSuccess means the step reached the desired state.
	ResultSuccess
)

// LowestRequeuingResult returns the result that asks for the earliest rerun.
func LowestRequeuingResult(a, b Result) Result {
	switch {
	case a == ResultEmpty:
		return b
	case b == ResultEmpty:
		return a
	case a == ResultRequeue || b == ResultRequeue:
		return ResultRequeue
	}
	return ResultSuccess
}
