package substitute

import (
	"errors"
	"runtime"
	"strings"
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

// growth nests levels replacements of every "a" of x by the next level:
// each level is ten times the one inside it when x is ten "a"s.
func growth(levels int) string {
	return strings.Repeat("${x//a/", levels) + "${x}" + strings.Repeat("}", levels)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestExpandOutputIsBounded(t *testing.T) {
	const secret = "s3cr3t-"
	vars := map[string]string{
		"x":       "aaaaaaaaaa",
		"secret":  strings.Repeat(secret, 100),
		"big":     strings.Repeat("b", 600<<10),
		"cap":     strings.Repeat("c", MaxValueSize),
		"capless": strings.Repeat("c", MaxValueSize-1),
		"kilo":    strings.Repeat("a", 1024),
		"kilo1":   strings.Repeat("a", 1024) + "z",
		"rep":     strings.Repeat("r", 1024),
	}
	tests := []struct {
		name    string
		in      string
		wantLen int    // when no error is expected
		wantVar string // the variable a SizeError names
	}{
		// Refused.
		{name: "growth template of the review, 52 bytes", in: growth(6), wantVar: "x"},
		{name: "growth template, 13 levels", in: growth(13), wantVar: "x"},
		{name: "growth of a secret", in: "${secret//s/${secret//s/${secret//s/${secret}}}}", wantVar: "secret"},
		{name: "concatenation", in: "${big}${big}", wantVar: "big"},
		{name: "a value at every depth", in: "${big}${m:-${big}${m:-${big}}}", wantVar: "big"},
		{name: "default of a default", in: "${m:-${n:-${big}${big}}}", wantVar: "big"},
		{name: "text after a value at the cap", in: "${cap}x", wantVar: ""},
		{name: "text before a value at the cap", in: "x${cap}", wantVar: "cap"},
		{name: "kept reference after a value at the cap", in: "${cap}${1}", wantVar: ""},
		{name: "replacement one byte over", in: "${kilo1//a/${rep}}z", wantVar: "kilo1"},
		{name: "substring past the cap", in: "${cap:0}${cap:1:1}", wantVar: "cap"},
		// Allowed.
		{name: "value at the cap", in: "${cap}", wantLen: MaxValueSize},
		{name: "one byte under the cap and text", in: "${capless}x", wantLen: MaxValueSize},
		{name: "replacement exactly at the cap", in: "${kilo//a/${rep}}", wantLen: MaxValueSize},
		{name: "default at the cap", in: "${m:-${n:-${cap}}}", wantLen: MaxValueSize},
		{name: "substring at the cap", in: "${cap:0}", wantLen: MaxValueSize},
		{name: "large value replaced", in: "${big//b/B}", wantLen: 600 << 10},
		{name: "growth under the cap", in: growth(5), wantLen: 1_000_000},
		{name: "pattern and replacement held at once", in: "${cap//${big}/${big}}", wantVar: "big"},
		{name: "discarded results are released", in: "${big//${big}/}${big}", wantLen: 600 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := &expander{vars: vars, strict: true}
			var got string
			var err error
			alloc := allocated(func() { got, err = e.expand(tt.in, 0) })
			g.Expect(alloc).To(BeNumerically("<", 64<<20), "allocated %d bytes", alloc)
			if tt.wantLen > 0 {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(HaveLen(tt.wantLen))
				return
			}
			g.Expect(err).To(MatchError(ErrOutputTooLarge))
			var se *SizeError
			g.Expect(errors.As(err, &se)).To(BeTrue())
			g.Expect(*se).To(Equal(SizeError{Limit: MaxValueSize, Variable: tt.wantVar}))
			g.Expect(err.Error()).To(ContainSubstring("1048576 bytes per value"))
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
		})
	}
}

func TestSizeErrorMessage(t *testing.T) {
	tests := []struct {
		err  SizeError
		want string
	}{
		{
			err:  SizeError{Limit: 10, Variable: "x", Field: "data.a"},
			want: "substitution output too large: expanding ${x} in field data.a would exceed the limit of 10 bytes per value",
		},
		{
			err:  SizeError{Limit: 20, Document: true, Field: `data["a.b"]`, Key: true},
			want: `substitution output too large: key data["a.b"] would exceed the limit of 20 bytes of growth per document`,
		},
		{
			err:  SizeError{Limit: 10, Variable: "x"},
			want: "substitution output too large: expanding ${x} in the value would exceed the limit of 10 bytes per value",
		},
		{
			err:  SizeError{Limit: 10, Key: true},
			want: "substitution output too large: a key would exceed the limit of 10 bytes per value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.err.Error()).To(Equal(tt.want))
			g.Expect(errors.Is(&tt.err, ErrOutputTooLarge)).To(BeTrue())
		})
	}
}
