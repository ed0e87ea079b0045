package substitute

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MaxBuildGrowth is the most bytes substitution may add to all the
// documents of one build together. MaxValueSize bounds each value and
// MaxDocumentGrowth each document; a build of many documents must not add
// up to more than a shared controller can hold.
const MaxBuildGrowth = 16 << 20

// Build substitutes the documents of one build, one after the other, in
// place: the parsed nodes a build hands over are never written out as YAML
// and parsed again. The growth of all its documents together is bounded
// by MaxBuildGrowth.
type Build struct {
	vars   map[string]string
	strict bool
	grown  int
}

// NewBuild returns the substitution of one build's documents with vars,
// or the error naming the variables whose names are not valid.
func NewBuild(vars map[string]string, strict bool) (*Build, error) {
	if err := ValidateVars(vars); err != nil {
		return nil, err
	}
	return &Build{vars: vars, strict: strict}, nil
}

// Node substitutes the references in doc, the parsed document of one
// object (its document node or its top mapping), as SubstituteYAML does
// in YAML. A document that opts out is left as it is. Past the limits of
// one value or one document, and past MaxBuildGrowth for the build's
// documents so far, the error matches ErrOutputTooLarge.
func (b *Build) Node(doc *yaml.Node) error {
	_, err := b.node(doc)
	return err
}

// node is Node, also reporting whether doc changed.
func (b *Build) node(doc *yaml.Node) (bool, error) {
	if disabledNode(doc) {
		return false, nil
	}
	w := &walker{expander: &expander{vars: b.vars, strict: b.strict}, kind: scalarValue(path(doc, "kind"))}
	changed, err := w.walk(doc, nil, false)
	if err != nil {
		return false, fmt.Errorf("%s: %w", nodeID(doc), err)
	}
	if b.grown += w.grown; b.grown > MaxBuildGrowth {
		return false, fmt.Errorf("%w: the documents would grow by more than %d bytes in all", ErrOutputTooLarge, MaxBuildGrowth)
	}
	return changed, nil
}
