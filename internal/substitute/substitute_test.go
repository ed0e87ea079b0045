package substitute

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

const cmHeader = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n"

// decode reads a document as kustomize and the build pipeline do (YAML 1.2).
func decode(g Gomega, doc []byte) map[string]any {
	var out map[string]any
	g.Expect(yaml.Unmarshal(doc, &out)).To(Succeed(), "result must be valid YAML:\n%s", doc)
	return out
}

func TestSubstituteYAML(t *testing.T) {
	vars := map[string]string{
		"replicas": "3",
		"flag":     "true",
		"ratio":    "1.5",
		"nothing":  "null",
		"version":  "1.0",
		"yes":      "yes",
		"colon":    "key: value",
		"quotes":   `say "hi" and 'bye'`,
		"newline":  "line one\nline two",
		"hash":     "a #not-a-comment",
		"flow":     "[a, b]",
		"inject":   "x\nkind: Secret",
		"star":     "*alias",
		"name":     "web",
		"tab":      "\tindented",
	}
	tests := []struct {
		name string
		body string // appended to a ConfigMap header
		want map[string]any
	}{
		{name: "plain integer", body: "spec:\n  replicas: ${replicas}\n", want: map[string]any{"spec": map[string]any{"replicas": 3}}},
		{name: "quoted integer stays a string", body: "data:\n  n: \"${replicas}\"\n", want: map[string]any{"data": map[string]any{"n": "3"}}},
		{name: "single-quoted stays a string", body: "data:\n  n: '${flag}'\n", want: map[string]any{"data": map[string]any{"n": "true"}}},
		{name: "plain bool", body: "spec:\n  on: ${flag}\n", want: map[string]any{"spec": map[string]any{"on": true}}},
		{name: "plain float", body: "spec:\n  r: ${ratio}\n", want: map[string]any{"spec": map[string]any{"r": 1.5}}},
		{name: "plain null", body: "spec:\n  x: ${nothing}\n", want: map[string]any{"spec": map[string]any{"x": nil}}},
		{name: "quoted version label", body: "  labels:\n    v: \"${version}\"\n", want: map[string]any{"metadata": map[string]any{"name": "app", "namespace": "default", "labels": map[string]any{"v": "1.0"}}}},
		{name: "yes stays a string", body: "data:\n  a: ${yes}\n", want: map[string]any{"data": map[string]any{"a": "yes"}}},
		{name: "text around a number is a string", body: "data:\n  a: v${replicas}\n", want: map[string]any{"data": map[string]any{"a": "v3"}}},
		{name: "colon", body: "data:\n  a: ${colon}\n", want: map[string]any{"data": map[string]any{"a": "key: value"}}},
		{name: "quotes in a plain scalar", body: "data:\n  a: ${quotes}\n", want: map[string]any{"data": map[string]any{"a": `say "hi" and 'bye'`}}},
		{name: "quotes in a double-quoted scalar", body: "data:\n  a: \"<${quotes}>\"\n", want: map[string]any{"data": map[string]any{"a": `<say "hi" and 'bye'>`}}},
		{name: "newline", body: "data:\n  a: ${newline}\n", want: map[string]any{"data": map[string]any{"a": "line one\nline two"}}},
		{name: "hash", body: "data:\n  a: ${hash}\n", want: map[string]any{"data": map[string]any{"a": "a #not-a-comment"}}},
		{name: "flow syntax stays text", body: "data:\n  a: ${flow}\n", want: map[string]any{"data": map[string]any{"a": "[a, b]"}}},
		{name: "alias syntax stays text", body: "data:\n  a: ${star}\n", want: map[string]any{"data": map[string]any{"a": "*alias"}}},
		{name: "no structure injection", body: "data:\n  a: ${inject}\n", want: map[string]any{"data": map[string]any{"a": "x\nkind: Secret"}}},
		{name: "literal block", body: "data:\n  script: |\n    echo ${name}\n    echo $HOME ${1}\n", want: map[string]any{"data": map[string]any{"script": "echo web\necho $HOME ${1}\n"}}},
		{name: "tab into a literal block", body: "data:\n  a: |\n    ${tab}\n", want: map[string]any{"data": map[string]any{"a": "\tindented\n"}}},
		{name: "keys are substituted and stay strings", body: "data:\n  ${replicas}: x\n  key-${name}: y\n", want: map[string]any{"data": map[string]any{"3": "x", "key-web": "y"}}},
		{name: "sequences", body: "data:\n  list:\n  - \"${name}\"\n  - ${replicas}\n", want: map[string]any{"data": map[string]any{"list": []any{"web", 3}}}},
		{name: "braceless is untouched", body: "data:\n  a: $name\n", want: map[string]any{"data": map[string]any{"a": "$name"}}},
		{name: "plain label stays a string", body: "  labels:\n    v: ${version}\n    on: ${flag}\n", want: map[string]any{"metadata": map[string]any{"name": "app", "namespace": "default", "labels": map[string]any{"v": "1.0", "on": "true"}}}},
		{name: "plain template annotation stays a string", body: "spec:\n  template:\n    metadata:\n      annotations:\n        n: ${replicas}\n", want: map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{"n": "3"}}}}}},
		{name: "plain ConfigMap data stays a string", body: "data:\n  n: ${replicas}\n", want: map[string]any{"data": map[string]any{"n": "3"}}},
		{name: "plain env value stays a string", body: "spec:\n  containers:\n  - name: c\n    env:\n    - name: X\n      value: ${flag}\n", want: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "env": []any{map[string]any{"name": "X", "value": "true"}}}}}}},
		{name: "explicit tag wins", body: "data:\n  a: !!str ${replicas}\n", want: map[string]any{"data": map[string]any{"a": "3"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := SubstituteYAML([]byte(cmHeader+tt.body), vars, true)
			g.Expect(err).NotTo(HaveOccurred())
			got := decode(g, out)
			for k, v := range tt.want {
				g.Expect(got).To(HaveKeyWithValue(k, v), "in:\n%s\nout:\n%s", tt.body, out)
			}
			g.Expect(got).To(HaveKeyWithValue("kind", "ConfigMap"))
		})
	}
}

func TestSubstituteYAMLUnchanged(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		{name: "no reference", doc: cmHeader + "data:\n  a: \"quoted\"   # comment kept\n"},
		{name: "opt-out annotation", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  a: ${missing}\n"},
		{name: "opt-out label", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    kustomize.toolkit.fluxcd.io/substitute: Disabled\ndata:\n  a: ${missing}\n"},
		{name: "only braceless", doc: cmHeader + "data:\n  a: $missing\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := SubstituteYAML([]byte(tt.doc), map[string]string{"x": "y"}, true)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(out)).To(Equal(tt.doc))
		})
	}
}

func TestSubstituteYAMLErrors(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		vars    map[string]string
		strict  bool
		wantErr []string
		is      error
	}{
		{
			name:    "strict missing variable names variable and object",
			doc:     cmHeader + "data:\n  a: ${missing}\n",
			strict:  true,
			wantErr: []string{"ConfigMap/default/app", `variable "missing"`},
			is:      ErrMissingVariable,
		},
		{
			name:    "invalid variable names",
			doc:     cmHeader,
			vars:    map[string]string{"ok_1": "x", "bad-name": "x", "1st": "x", "dot.name": "x"},
			wantErr: []string{`"1st"`, `"bad-name"`, `"dot.name"`},
			is:      ErrInvalidName,
		},
		{
			name:    "unsupported operator",
			doc:     cmHeader + "data:\n  a: ${x^^}\n",
			vars:    map[string]string{"x": "y"},
			wantErr: []string{"ConfigMap/default/app", "unsupported expression ${x^^}"},
		},
		{
			name:    "not YAML",
			doc:     "a: [\n",
			wantErr: []string{"parsing the document"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := SubstituteYAML([]byte(tt.doc), tt.vars, tt.strict)
			g.Expect(err).To(HaveOccurred())
			for _, w := range tt.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
			if tt.is != nil {
				g.Expect(errors.Is(err, tt.is)).To(BeTrue())
			}
		})
	}
}

func TestSubstituteYAMLNonStrict(t *testing.T) {
	g := NewWithT(t)
	out, err := SubstituteYAML([]byte(cmHeader+"data:\n  a: x${missing}y\n  b: ${missing}\n"), nil, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(decode(g, out)["data"]).To(Equal(map[string]any{"a": "xy", "b": ""}))
}

func object(g Gomega, doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	j, err := sigsyaml.YAMLToJSON([]byte(doc))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.UnmarshalJSON(j)).To(Succeed())
	return u
}

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"replicas": "3", "image": "nginx:1.27", "multi": "a: b\n- c", "flag": "true", "q": `"quoted"`}
	tests := []struct {
		name  string
		doc   string
		check func(g Gomega, u *unstructured.Unstructured)
	}{
		{
			name: "whole-value reference is typed",
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: ${replicas}\n  template:\n    spec:\n      containers:\n      - name: c\n        image: ${image}\n",
			check: func(g Gomega, u *unstructured.Unstructured) {
				r, found, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(found).To(BeTrue())
				g.Expect(r).To(Equal(int64(3)))
				cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				g.Expect(cs[0].(map[string]any)["image"]).To(Equal("nginx:1.27"))
			},
		},
		{
			name: "special characters stay one string",
			doc:  cmHeader + "data:\n  a: ${multi}\n  b: <${q}>\n  c: v${flag}\n",
			check: func(g Gomega, u *unstructured.Unstructured) {
				data, _, _ := unstructured.NestedStringMap(u.Object, "data")
				g.Expect(data).To(Equal(map[string]string{"a": "a: b\n- c", "b": `<"quoted">`, "c": "vtrue"}))
			},
		},
		{
			name: "existing typed values are kept",
			doc:  cmHeader + "data:\n  num: \"3\"\n  t: \"true\"\n  s: ${image}\n",
			check: func(g Gomega, u *unstructured.Unstructured) {
				data, _, _ := unstructured.NestedStringMap(u.Object, "data")
				g.Expect(data).To(Equal(map[string]string{"num": "3", "t": "true", "s": "nginx:1.27"}))
			},
		},
		{
			name: "opt-out annotation",
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  a: ${missing}\n",
			check: func(g Gomega, u *unstructured.Unstructured) {
				v, _, _ := unstructured.NestedString(u.Object, "data", "a")
				g.Expect(v).To(Equal("${missing}"))
			},
		},
		{
			name: "opt-out label",
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  a: ${missing}\n",
			check: func(g Gomega, u *unstructured.Unstructured) {
				v, _, _ := unstructured.NestedString(u.Object, "data", "a")
				g.Expect(v).To(Equal("${missing}"))
			},
		},
		{
			name: "braceless left alone",
			doc:  cmHeader + "data:\n  a: $image ${image}\n",
			check: func(g Gomega, u *unstructured.Unstructured) {
				v, _, _ := unstructured.NestedString(u.Object, "data", "a")
				g.Expect(v).To(Equal("$image nginx:1.27"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := object(g, tt.doc)
			g.Expect(Substitute([]*unstructured.Unstructured{u}, vars, true)).To(Succeed())
			tt.check(g, u)
			// The result deep-copies: every number is a JSON-compatible type.
			g.Expect(u.DeepCopy()).NotTo(BeNil())
		})
	}
}

func TestSubstituteErrors(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		strict  bool
		wantErr []string
	}{
		{name: "strict missing", strict: true, wantErr: []string{"ConfigMap/default/app", `variable "missing"`}},
		{name: "invalid name", vars: map[string]string{"a-b": "x"}, wantErr: []string{`invalid variable name "a-b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ok := object(g, cmHeader+"data:\n  a: ok\n")
			bad := object(g, cmHeader+"data:\n  a: ${missing}\n")
			err := Substitute([]*unstructured.Unstructured{ok, bad}, tt.vars, tt.strict)
			g.Expect(err).To(HaveOccurred())
			for _, w := range tt.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
	g := NewWithT(t)
	u := object(g, cmHeader+"data:\n  a: <${missing}>\n")
	g.Expect(Substitute([]*unstructured.Unstructured{u}, nil, false)).To(Succeed())
	v, _, _ := unstructured.NestedString(u.Object, "data", "a")
	g.Expect(v).To(Equal("<>"))
}

func TestVars(t *testing.T) {
	tests := []struct {
		name    string
		sources []map[string]string
		want    map[string]string
	}{
		{name: "none", want: map[string]string{}},
		{name: "one", sources: []map[string]string{{"a": "1"}}, want: map[string]string{"a": "1"}},
		{
			name: "later sources override, inline last",
			sources: []map[string]string{
				{"a": "from-cm", "b": "from-cm"},
				{"b": "from-secret", "c": "from-secret"},
				{"c": "inline"},
			},
			want: map[string]string{"a": "from-cm", "b": "from-secret", "c": "inline"},
		},
		{name: "nil source", sources: []map[string]string{nil, {"a": "1"}}, want: map[string]string{"a": "1"}},
		{name: "empty value overrides", sources: []map[string]string{{"a": "1"}, {"a": ""}}, want: map[string]string{"a": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Vars(tt.sources...)).To(Equal(tt.want))
		})
	}
}

func TestVarsDoesNotAlias(t *testing.T) {
	g := NewWithT(t)
	src := map[string]string{"a": "1"}
	out := Vars(src)
	out["a"] = "2"
	g.Expect(src["a"]).To(Equal("1"))
}

func TestDisabled(t *testing.T) {
	tests := []struct {
		annotations, labels map[string]string
		want                bool
	}{
		{want: false},
		{annotations: map[string]string{DisableKey: "disabled"}, want: true},
		{labels: map[string]string{DisableKey: "DISABLED"}, want: true},
		{annotations: map[string]string{DisableKey: "enabled"}, want: false},
		{annotations: map[string]string{"other": "disabled"}, want: false},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(Disabled(tt.annotations, tt.labels)).To(Equal(tt.want))
	}
}

func TestSubstituteYAMLSizeLimits(t *testing.T) {
	const secret = "s3cr3t-"
	vars := map[string]string{
		"x":      "aaaaaaaaaa",
		"secret": strings.Repeat(secret, 10),
		"cap":    strings.Repeat("c", MaxValueSize),
		"cert":   strings.Repeat("-----CERT-----\n", 60<<10),
		"fits":   strings.Repeat("p", 18+len("${fits}")),
		"over":   strings.Repeat("p", 19+len("${over}")),
	}
	// Three values at the cap grow a document by MaxDocumentGrowth-3*6
	// bytes; ${fits} adds the last 18.
	threeCaps := "data:\n  a: ${cap}\n  b: ${cap}\n  c: ${cap}\n"
	tests := []struct {
		name string
		body string // appended to a ConfigMap header
		want *SizeError
	}{
		{
			name: "growth template of the review",
			body: "data:\n  a: " + growth(13) + "\n",
			want: &SizeError{Limit: MaxValueSize, Variable: "x", Field: "data.a"},
		},
		{
			name: "growth of a secret in a container",
			body: "spec:\n  containers:\n  - name: c\n    env:\n    - name: A\n    - name: B\n      value: ${secret//s/${secret//s/${secret//s/${secret//s/${secret//s/${secret}}}}}}\n",
			want: &SizeError{Limit: MaxValueSize, Variable: "secret", Field: "spec.containers[0].env[1].value"},
		},
		{
			name: "annotation key with dots",
			body: "  annotations:\n    example.com/a: x${cap}\n",
			want: &SizeError{Limit: MaxValueSize, Variable: "cap", Field: `metadata.annotations["example.com/a"]`},
		},
		{
			name: "key",
			body: "data:\n  ${cap}${cap}: x\n",
			want: &SizeError{Limit: MaxValueSize, Variable: "cap", Field: `data["${cap}${cap}"]`, Key: true},
		},
		{
			name: "document growth one byte over",
			body: threeCaps + "  d: ${over}\n",
			want: &SizeError{Limit: MaxDocumentGrowth, Document: true, Variable: "over", Field: "data.d"},
		},
		{
			name: "document growth of many values",
			body: "data:\n" + strings.Repeat("  - "+growth(5)+"\n", 4),
			want: &SizeError{Limit: MaxDocumentGrowth, Document: true, Variable: "x", Field: "data[3]"},
		},
		{name: "document growth exactly at the limit", body: threeCaps + "  d: ${fits}\n"},
		{name: "a large certificate bundle", body: "data:\n  ca.crt: |\n    ${cert}\n"},
		{name: "growth under the limits", body: "data:\n  a: " + growth(5) + "\n  b: " + growth(5) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var out []byte
			var err error
			alloc := allocated(func() { out, err = SubstituteYAML([]byte(cmHeader+tt.body), vars, true) })
			g.Expect(alloc).To(BeNumerically("<", 64<<20), "allocated %d bytes", alloc)
			if tt.want == nil {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(scalarBytes(g, out)).To(BeNumerically("<=", scalarBytes(g, []byte(cmHeader+tt.body))+MaxDocumentGrowth))
				return
			}
			g.Expect(err).To(MatchError(ErrOutputTooLarge))
			var se *SizeError
			g.Expect(errors.As(err, &se)).To(BeTrue())
			g.Expect(se).To(Equal(tt.want))
			g.Expect(err.Error()).To(HavePrefix("ConfigMap/default/app: substitution output too large: "))
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
		})
	}
}

func TestSubstituteSizeLimit(t *testing.T) {
	g := NewWithT(t)
	u := object(g, cmHeader+"data:\n  a: "+growth(13)+"\n")
	err := Substitute([]*unstructured.Unstructured{u}, map[string]string{"x": "aaaaaaaaaa"}, true)
	g.Expect(err).To(MatchError(ErrOutputTooLarge))
	g.Expect(err.Error()).To(Equal("ConfigMap/default/app: substitution output too large: expanding ${x} in field data.a would exceed the limit of 1048576 bytes per value"))
}

// scalarBytes returns the bytes of all the scalars of a document.
func scalarBytes(g Gomega, doc []byte) int {
	var n yaml.Node
	g.Expect(yaml.Unmarshal(doc, &n)).To(Succeed())
	return nodeBytes(&n)
}

func nodeBytes(n *yaml.Node) int {
	total := len(n.Value)
	for _, c := range n.Content {
		total += nodeBytes(c)
	}
	return total
}
