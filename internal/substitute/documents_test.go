package substitute

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"go.yaml.in/yaml/v3"
)

// TestBuild substitutes the parsed documents of one build in turn, their
// growth bounded together.
func TestBuild(t *testing.T) {
	doc := func(data string) []byte { return []byte(cmHeader + "data:\n" + data) }
	big := strings.Repeat("b", MaxValueSize)
	// grows is a document that grows by about 2 MiB with big: each stays
	// within MaxDocumentGrowth, 8 of them within MaxBuildGrowth, 9 not.
	grows := doc("  a: ${big}\n  b: ${big}\n")
	repeat := func(d []byte, n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	tests := []struct {
		name    string
		docs    [][]byte
		vars    map[string]string
		strict  bool
		want    []string // data.k of each document, when no error
		wantErr error
		errText string
	}{
		{name: "no documents", docs: nil, want: []string{}},
		{name: "each document in order", vars: map[string]string{"a": "one", "b": "two"},
			docs: [][]byte{doc("  k: ${a}\n"), doc("  k: ${b}\n"), doc("  k: plain\n")},
			want: []string{"one", "two", "plain"}},
		{name: "unset is empty when not strict", docs: [][]byte{doc("  k: x${unset}x\n")},
			want: []string{"xx"}},
		{name: "unset fails when strict", docs: [][]byte{doc("  k: ${a}\n"), doc("  k: ${unset}\n")},
			vars: map[string]string{"a": "one"}, strict: true, wantErr: ErrMissingVariable, errText: "ConfigMap/default/app"},
		{name: "a document past its own limit", docs: [][]byte{doc("  a: ${big}\n  b: ${big}\n  c: ${big}\n  d: ${big}\n")},
			vars: map[string]string{"big": big}, wantErr: ErrOutputTooLarge, errText: "of growth per document"},
		{name: "8 MiB of growth in all", docs: repeat(grows, 4), vars: map[string]string{"big": big}},
		{name: "past the growth of a build", docs: repeat(grows, 9), vars: map[string]string{"big": big},
			wantErr: ErrOutputTooLarge, errText: "the documents would grow by more than 16777216 bytes in all"},
		{name: "a value that is not text", docs: [][]byte{doc("  k: x${a}\n")}, vars: map[string]string{"a": "\xff"},
			wantErr: ErrNotText, errText: "ConfigMap/default/app: data.k: the substituted value is not UTF-8 text"},
		{name: "invalid variable name", docs: [][]byte{doc("  k: v\n")}, vars: map[string]string{"1x": "v"},
			wantErr: ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			nodes := make([]*yaml.Node, len(tt.docs))
			for i, d := range tt.docs {
				nodes[i] = &yaml.Node{}
				g.Expect(yaml.Unmarshal(d, nodes[i])).To(Succeed())
			}
			err := substituteEach(nodes, tt.vars, tt.strict)
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.errText))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			for i, want := range tt.want {
				var doc struct{ Data map[string]string }
				g.Expect(nodes[i].Decode(&doc)).To(Succeed())
				g.Expect(doc.Data).To(HaveKeyWithValue("k", want))
			}
		})
	}
}

// substituteEach substitutes nodes, the documents of one build, in order.
func substituteEach(nodes []*yaml.Node, vars map[string]string, strict bool) error {
	b, err := NewBuild(vars, strict)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if err := b.Node(n); err != nil {
			return err
		}
	}
	return nil
}
