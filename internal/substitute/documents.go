package substitute

import "fmt"

// MaxBuildGrowth is the most bytes substitution may add to all the
// documents of one build together. MaxValueSize bounds each value and
// MaxDocumentGrowth each document; a build of many documents must not add
// up to more than a shared controller can hold.
const MaxBuildGrowth = 16 << 20

// Documents runs SubstituteYAML on each document of a build, in order, and
// returns the results in the same order. docs is not changed. The growth of
// all the documents together is bounded by MaxBuildGrowth: past it, and
// past the limits of SubstituteYAML, the error matches ErrOutputTooLarge.
// The first error stops the substitution.
func Documents(docs [][]byte, vars map[string]string, strict bool) ([][]byte, error) {
	out := make([][]byte, len(docs))
	growth := 0
	for i, doc := range docs {
		var err error
		if out[i], err = SubstituteYAML(doc, vars, strict); err != nil {
			return nil, err
		}
		if growth += max(len(out[i])-len(doc), 0); growth > MaxBuildGrowth {
			return nil, fmt.Errorf("%w: the documents would grow by more than %d bytes in all", ErrOutputTooLarge, MaxBuildGrowth)
		}
	}
	return out, nil
}
