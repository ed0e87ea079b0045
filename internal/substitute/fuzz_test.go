package substitute

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzSubstituteYAML checks that substitution never panics, that a
// document it changes is still valid YAML, and that it stays within the
// size limits: no scalar above MaxValueSize, and no more than
// MaxDocumentGrowth bytes added over all scalars.
func FuzzSubstituteYAML(f *testing.F) {
	for _, s := range []string{
		cmHeader + "data:\n  a: ${x}\n",
		cmHeader + "data:\n  a: \"${x:=d}\"\n  b: ${x:1:2}\n  c: ${x//a/b}\n",
		cmHeader + "spec:\n  r: ${n}\n",
		"a: ${x:-${y:-${z}}}\n",
		"a: |\n  ${x}\n",
		"a: " + growth(13) + "\n",
		"a: [" + growth(4) + ", " + growth(4) + "]\n${x//a/${x//a/${x//a/${y}}}}: b\n",
	} {
		f.Add([]byte(s), "a: b\n\"q'\n#")
		f.Add([]byte(s), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	}
	f.Fuzz(func(t *testing.T, doc []byte, value string) {
		var in any
		if yaml.Unmarshal(doc, &in) != nil {
			return // only valid documents need to stay valid
		}
		vars := map[string]string{"x": value, "n": value, "y": value}
		out, err := SubstituteYAML(doc, vars, false)
		if err != nil {
			return
		}
		var v any
		if err := yaml.Unmarshal(out, &v); err != nil {
			t.Fatalf("output is not valid YAML: %v\n%s", err, out)
		}
		checkSizes(t, doc, out)
	})
}

// checkSizes fails unless the scalars of out are within the limits, given
// those of the document in.
func checkSizes(t *testing.T, in, out []byte) {
	var before, after yaml.Node
	if yaml.Unmarshal(in, &before) != nil || yaml.Unmarshal(out, &after) != nil {
		t.Fatal("the documents do not parse")
	}
	if size := largest(&after); size > MaxValueSize {
		t.Fatalf("a scalar of %d bytes is above MaxValueSize", size)
	}
	if grown := nodeBytes(&after) - nodeBytes(&before); grown > MaxDocumentGrowth {
		t.Fatalf("the scalars grew by %d bytes, above MaxDocumentGrowth", grown)
	}
}

// largest returns the size of the largest scalar below n.
func largest(n *yaml.Node) int {
	size := len(n.Value)
	for _, c := range n.Content {
		size = max(size, largest(c))
	}
	return size
}

// FuzzExpandBounded checks the budget of one expansion under a small limit:
// a result never exceeds the limit, the budget then holds exactly the
// result, and the limit only refuses, never changes, a result.
func FuzzExpandBounded(f *testing.F) {
	for _, s := range []string{
		"${x}", "a${x}b${y}c", growth(6), "${m:-${x}${m:-${x}}}",
		"${x//${y}/${x}}", "${x/a/${x:1}}", "${x:0:3}${1}${", "${y//}",
	} {
		f.Add(s, "aaaaaaaaaa", uint16(100))
		f.Add(s, "abc", uint16(3))
	}
	f.Fuzz(func(t *testing.T, in, value string, limit uint16) {
		vars := map[string]string{"x": value, "y": value + value}
		e := &expander{vars: vars}
		e.begin(int(limit)+1, 0, false)
		out, err := e.expand(in, 0)
		var se *SizeError
		if errors.As(err, &se) && se.Limit != int(limit)+1 {
			t.Fatalf("the error reports a limit of %d, not %d", se.Limit, int(limit)+1)
		}
		if err != nil {
			return
		}
		if len(out) > int(limit)+1 || e.held != len(out) {
			t.Fatalf("%d bytes out, %d held, limit %d", len(out), e.held, int(limit)+1)
		}
		full := &expander{vars: vars}
		if again, err := full.expand(in, 0); err != nil || again != out {
			t.Fatalf("under MaxValueSize: %q, %v; under %d: %q", again, err, int(limit)+1, out)
		}
	})
}
