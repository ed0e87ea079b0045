package substitute_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/substitute"
)

// nodesTree is a kustomization whose objects hold every kind of scalar,
// written in every style, and values that kustomize itself writes
// (generators, labels, annotations, images, replicas, patches).
var nodesTree = map[string]string{
	"kustomization.yaml": `namePrefix: ${prefix}-
labels:
- pairs:
    tier: "${tier}"
    plain: ${tier}
commonAnnotations:
  note: ${note}
  count: "3"
images:
- name: nginx
  newTag: "1.25"
replicas:
- name: web
  count: 3
configMapGenerator:
- name: gen
  literals:
  - a=${a}
  - n=3
  - b=true
  - q="${q}"
secretGenerator:
- name: sec
  literals:
  - token=${a}
resources: [web.yaml, types.yaml, flow.yaml]
patches:
- patch: |
    - op: add
      path: /spec/template/metadata/annotations
      value:
        patched: "${a}"
        n: 5
  target: {kind: Deployment}
`,
	"web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, version: "${version}"}
spec:
  replicas: ${replicas}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:${tag:=latest}
        args:
        - "${a}"
        - ${a}
        - '${q}'
        - --flag=${flag}
        env:
        - name: N
          value: ${replicas}
        - name: SCRIPT
          value: |
            echo ${a} $HOME ${1}
`,
	"flow.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: flow, labels: {a: b}}
data: {k: v, empty: , implicit, "${quoted}": x}
`,
	"types.yaml": `apiVersion: example.com/v1
kind: Types
metadata:
  name: types
spec:
  int: 42
  negative: -7
  big: 12345678901234567890
  float: 1.5
  wholeFloat: 2.0
  exp: 1e3
  dot: .5
  octal: 0o17
  leadingZero: 017
  hex: 0x1F
  yes: yes
  no: no
  on: on
  y: y
  bool: true
  Bool: True
  nullValue: null
  tilde: ~
  empty:
  date: 2024-01-02
  time: 2024-01-02T03:04:05Z
  quotedInt: "42"
  single: 'single ${a}'
  literal: |
    line ${a}
    next
  folded: >
    folded ${a}
  flow: {a: 1, b: [x, "y", 3]}
  anchors:
    base: &base {k: v, n: 1}
    copy: *base
    merged:
      <<: *base
      n: 2
  unicode: "é ✓ ${a}"
  whole: ${n}
  wholeFloatVar: ${f}
  wholeBool: ${b}
  wholeNull: ${nil}
  ${key}: keyed
  nested: ${a:-${q}}
`,
}

// nodesVars are values that type differently when substituted whole.
var nodesVars = map[string]string{
	"prefix": "p", "tier": "3", "note": "a: b # c", "a": "x y", "q": `it's "q"`, "version": "1.0",
	"replicas": "2", "flag": "true", "n": "7", "f": "1.50", "b": "false", "nil": "null", "key": "k", "quoted": "4",
}

// TestNodesDecodeAsTheirYAML: the objects of a build decoded from
// kustomize's nodes, substituted or not, are the objects its YAML decodes
// into, substituted document by document as YAML: handing over the nodes
// changes no value and no type.
func TestNodesDecodeAsTheirYAML(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	for name, content := range nodesTree {
		g.Expect(os.WriteFile(filepath.Join(root, name), []byte(content), 0o644)).To(Succeed())
	}
	for _, vars := range []map[string]string{nil, nodesVars} {
		docs, err := build.BuildYAML(root, ".", build.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(docs).To(HaveLen(5))
		want := decodeAsYAML(g, docs, vars)

		nodes, err := build.BuildDocuments(root, ".", build.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		var edit func(*kyaml.Node) error
		if vars != nil {
			sub, err := substitute.NewBuild(vars, true)
			g.Expect(err).NotTo(HaveOccurred())
			edit = sub.Node
		}
		got, err := nodes.Objects(edit)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want))
	}
}

// FuzzNodesDecodeAsTheirYAML: substituting and decoding a parsed document
// gives the object that substituting its YAML and decoding that gives, or
// fails where that fails.
func FuzzNodesDecodeAsTheirYAML(f *testing.F) {
	f.Add([]byte(nodesTree["types.yaml"]), "3")
	f.Add([]byte(nodesTree["web.yaml"]), "a: b")
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: '${n}', b: ${n}}\n"), "1e3")
	f.Add([]byte("apiVersion: v1\nkind: X\nmetadata: {name: a}\nspec: !!map {a: !!str 3, b: !!binary aGk=, c: !foo x}\n"), "~")
	f.Fuzz(func(t *testing.T, doc []byte, value string) {
		vars := map[string]string{"n": value, "f": value + "0", "key": value}
		sub, err := substitute.NewBuild(vars, false)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr := build.FromYAML([][]byte{doc}).Objects(sub.Node)
		out, wantErr := substitute.SubstituteYAML(doc, vars, false)
		var want []*unstructured.Unstructured
		if wantErr == nil {
			want, wantErr = oldDecode([][]byte{out})
		}
		switch {
		case (gotErr == nil) != (wantErr == nil):
			t.Fatalf("from nodes: %v; from YAML: %v\n%s", gotErr, wantErr, doc)
		case gotErr == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("from nodes:\n%#v\nfrom YAML:\n%#v\n%s", got[0].Object, want[0].Object, doc)
		}
	})
}

// decodeAsYAML substitutes docs one by one as YAML (when vars is not nil)
// and decodes them as kustomize's own decoding of a document does.
func decodeAsYAML(g Gomega, docs [][]byte, vars map[string]string) []*unstructured.Unstructured {
	if vars != nil {
		for i := range docs {
			var err error
			docs[i], err = substitute.SubstituteYAML(docs[i], vars, true)
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	objs, err := oldDecode(docs)
	g.Expect(err).NotTo(HaveOccurred())
	return objs
}

// oldDecode decodes documents through kustomize's RNode: parse, write out
// as YAML, parse into a map, write as JSON, parse the JSON.
func oldDecode(docs [][]byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, doc := range docs {
		rn, err := kyaml.Parse(string(doc))
		if err != nil {
			return nil, err
		}
		j, err := rn.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, err
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// BenchmarkBuildSubstituteDecode measures a build of nodesTree (five
// objects, with references in each) substituted and decoded from
// kustomize's nodes, and as it was before: each document written as YAML,
// substituted as YAML and decoded from YAML.
func BenchmarkBuildSubstituteDecode(b *testing.B) {
	root := b.TempDir()
	for name, content := range nodesTree {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	vars := nodesVars
	b.Run("nodes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			docs, err := build.BuildDocuments(root, ".", build.Options{})
			if err != nil {
				b.Fatal(err)
			}
			sub, err := substitute.NewBuild(vars, true)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := docs.Objects(sub.Node); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			docs, err := build.BuildYAML(root, ".", build.Options{})
			if err != nil {
				b.Fatal(err)
			}
			for i := range docs {
				if docs[i], err = substitute.SubstituteYAML(docs[i], vars, true); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := oldDecode(docs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
