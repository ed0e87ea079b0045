package substitute

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{
		"name":    "web",
		"empty":   "",
		"version": "1.2.3",
		"path":    "a/b/a/b",
		"greek":   "αβγδε",
		"special": `he said "hi": ok`,
		"other":   "fallback",
	}
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		// Plain references.
		{in: "${name}", want: "web"},
		{in: "app-${name}-svc", want: "app-web-svc"},
		{in: "${name}${name}", want: "webweb"},
		{in: "${empty}", want: ""},
		{in: "${special}", want: `he said "hi": ok`},
		// Defaults.
		{in: "${missing:=def}", want: "def"},
		{in: "${missing:-def}", want: "def"},
		{in: "${empty:-def}", want: "def"},
		{in: "${empty:=def}", want: "def"},
		{in: "${name:-def}", want: "web"},
		{in: "${missing-def}", want: "def"},
		{in: "${empty-def}", want: ""},
		{in: "${missing=def}", want: "def"},
		{in: "${missing:-}", want: ""},
		{in: "${missing:-${other}}", want: "fallback"},
		{in: "${missing:-${also_missing:-deep}}", want: "deep"},
		{in: "${missing:-a:b c}", want: "a:b c"},
		{in: "${missing:-{json}}", want: "{json}"},
		// Substrings.
		{in: "${version:2}", want: "2.3"},
		{in: "${version:0:3}", want: "1.2"},
		{in: "${version:2:1}", want: "2"},
		{in: "${version: -3}", want: "2.3"},
		{in: "${version:1:-1}", want: ".2."},
		{in: "${version:10}", want: ""},
		{in: "${version:0:100}", want: "1.2.3"},
		{in: "${greek:1:3}", want: "βγδ"},
		{in: "${version:-5}", want: "1.2.3"}, // a default, as in bash
		{in: "${version:x}", wantErr: `offset "x" is not an integer`},
		{in: "${version:1:y}", wantErr: `length "y" is not an integer`},
		{in: "${version:3:-3}", wantErr: "the length ends before the offset"},
		// Replacement.
		{in: "${path/a/x}", want: "x/b/a/b"},
		{in: "${path//a/x}", want: "x/b/x/b"},
		{in: "${path//a}", want: "/b//b"},
		{in: "${path//}", want: "a/b/a/b"},
		{in: "${version//./-}", want: "1-2-3"},
		{in: "${path/a/${name}}", want: "web/b/a/b"},
		// Left alone.
		{in: "$name", want: "$name"},
		{in: "$name and ${name}", want: "$name and web"},
		{in: "price: $5", want: "price: $5"},
		{in: "${1}", want: "${1}"},
		{in: "${#name}", want: "${#name}"},
		{in: "${}", want: "${}"},
		{in: "${ name }", want: "${ name }"},
		{in: "unterminated ${name", want: "unterminated ${name"},
		{in: "$${name}", want: "$web"},
		{in: "a}b{c", want: "a}b{c"},
		// Errors.
		{in: "${name%suffix}", wantErr: "unsupported expression ${name%suffix}"},
		{in: "${name@Q}", wantErr: "unsupported expression"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			e := &expander{vars: vars, strict: true}
			got, err := e.expand(tt.in, 0)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestExpandStrictness(t *testing.T) {
	tests := []struct {
		in        string
		strict    bool
		want      string
		wantError bool
	}{
		{in: "x-${missing}-y", strict: false, want: "x--y"},
		{in: "x-${missing}-y", strict: true, wantError: true},
		{in: "${missing:2}", strict: false, want: ""},
		{in: "${missing:2}", strict: true, wantError: true},
		{in: "${missing/a/b}", strict: true, wantError: true},
		{in: "${missing:-ok}", strict: true, want: "ok"},
		{in: "${missing-ok}", strict: true, want: "ok"},
		{in: "${a:-${missing}}", strict: true, wantError: true},
		{in: "${a:-${missing}}", strict: false, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			e := &expander{vars: map[string]string{}, strict: tt.strict}
			got, err := e.expand(tt.in, 0)
			if tt.wantError {
				g.Expect(errors.Is(err, ErrMissingVariable)).To(BeTrue(), "got %v", err)
				g.Expect(err.Error()).To(ContainSubstring(`"missing"`))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestExpandDepthIsBounded(t *testing.T) {
	g := NewWithT(t)
	in := "x"
	for range 40 {
		in = "${m:-" + in + "}"
	}
	_, err := (&expander{vars: map[string]string{}}).expand(in, 0)
	g.Expect(err).To(MatchError(ContainSubstring("nested more than")))
}
