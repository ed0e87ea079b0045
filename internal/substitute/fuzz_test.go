package substitute

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzSubstituteYAML checks that substitution never panics and that a
// document it changes is still valid YAML.
func FuzzSubstituteYAML(f *testing.F) {
	for _, s := range []string{
		cmHeader + "data:\n  a: ${x}\n",
		cmHeader + "data:\n  a: \"${x:=d}\"\n  b: ${x:1:2}\n  c: ${x//a/b}\n",
		cmHeader + "spec:\n  r: ${n}\n",
		"a: ${x:-${y:-${z}}}\n",
		"a: |\n  ${x}\n",
	} {
		f.Add([]byte(s), "a: b\n\"q'\n#")
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
	})
}
