package imagepolicy

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// TestCompileInvalid: every fault of a Spec is an *InvalidSpecError that
// names the field and its value.
func TestCompileInvalid(t *testing.T) {
	tests := []struct {
		name      string
		spec      Spec
		wantField string
		wantMsg   string // exact, or the prefix when prefix
		prefix    bool
	}{
		{
			name:      "bad range",
			spec:      Spec{SemverRange: ">>1"},
			wantField: "policy.semver.range",
			wantMsg:   `policy.semver.range ">>1": `,
			prefix:    true,
		},
		{
			name:      "bad regexp",
			spec:      Spec{Numerical: "asc", FilterPattern: "^main-(["},
			wantField: "filterTags.pattern",
			wantMsg:   `filterTags.pattern "^main-([": error parsing regexp: `,
			prefix:    true,
		},
		{
			name:      "unknown alphabetical order",
			spec:      Spec{Alphabetical: "up"},
			wantField: "policy.alphabetical.order",
			wantMsg:   `policy.alphabetical.order "up": must be "asc" or "desc"`,
		},
		{
			name:      "orders are case-sensitive",
			spec:      Spec{Numerical: "ASC"},
			wantField: "policy.numerical.order",
			wantMsg:   `policy.numerical.order "ASC": must be "asc" or "desc"`,
		},
		{
			name:      "no policy",
			spec:      Spec{FilterPattern: ".*"},
			wantField: "policy",
			wantMsg:   "policy: exactly one of semver, alphabetical and numerical must be set, got none",
		},
		{
			name:      "two policies",
			spec:      Spec{SemverRange: "^1", Numerical: "asc"},
			wantField: "policy",
			wantMsg:   "policy: exactly one of semver, alphabetical and numerical must be set, got semver and numerical",
		},
		{
			name:      "three policies",
			spec:      Spec{SemverRange: "^1", Alphabetical: "asc", Numerical: "desc"},
			wantField: "policy",
			wantMsg:   "policy: exactly one of semver, alphabetical and numerical must be set, got semver and alphabetical and numerical",
		},
		{
			name:      "extract without pattern",
			spec:      Spec{Numerical: "asc", FilterExtract: "$ts"},
			wantField: "filterTags.extract",
			wantMsg:   `filterTags.extract "$ts": needs filterTags.pattern to extract from`,
		},
		{
			name:      "extract names a missing group",
			spec:      Spec{Numerical: "asc", FilterPattern: `^main-(?P<ts>\d+)$`, FilterExtract: "$tss"},
			wantField: "filterTags.extract",
			wantMsg:   `filterTags.extract "$tss": names "tss", which is no group of filterTags.pattern`,
		},
		{
			name:      "$1x is the group named 1x",
			spec:      Spec{Numerical: "asc", FilterPattern: `^main-(\d+)x$`, FilterExtract: "$1x"},
			wantField: "filterTags.extract",
			wantMsg:   `filterTags.extract "$1x": names "1x", which is no group of filterTags.pattern`,
		},
		{
			name:      "group number out of range",
			spec:      Spec{Numerical: "asc", FilterPattern: `^main-(\d+)$`, FilterExtract: "${2}"},
			wantField: "filterTags.extract",
			wantMsg:   `filterTags.extract "${2}": names "2", which is no group of filterTags.pattern`,
		},
		{
			name:      "a leading zero makes a name",
			spec:      Spec{Numerical: "asc", FilterPattern: `^main-(\d+)$`, FilterExtract: "$01"},
			wantField: "filterTags.extract",
			wantMsg:   `filterTags.extract "$01": names "01", which is no group of filterTags.pattern`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Compile(tt.spec)
			g.Expect(p).To(BeNil())
			var invalid *InvalidSpecError
			g.Expect(errors.As(err, &invalid)).To(BeTrue(), "error %v", err)
			g.Expect(invalid.Field).To(Equal(tt.wantField))
			if tt.prefix {
				g.Expect(err.Error()).To(HavePrefix(tt.wantMsg))
			} else {
				g.Expect(err.Error()).To(Equal(tt.wantMsg))
			}
		})
	}
}

// TestCompileValid: valid specs compile, and String describes them.
func TestCompileValid(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"semver", Spec{SemverRange: "^1.0"}, "semver ^1.0"},
		{"semver range with spaces", Spec{SemverRange: ">= 1.0, < 2"}, "semver >= 1.0, < 2"},
		{"alphabetical asc", Spec{Alphabetical: "asc"}, "alphabetical asc"},
		{"alphabetical desc", Spec{Alphabetical: "desc"}, "alphabetical desc"},
		{"numerical desc", Spec{Numerical: "desc"}, "numerical desc"},
		{
			"numerical with filter and named extract",
			Spec{Numerical: "asc", FilterPattern: `^main-[a-f0-9]+-(?P<ts>[0-9]+)`, FilterExtract: "$ts"},
			"numerical asc, filter ^main-[a-f0-9]+-(?P<ts>[0-9]+) extract $ts",
		},
		{"filter without extract", Spec{SemverRange: "*", FilterPattern: `^v1\.`}, `semver *, filter ^v1\.`},
		{"braced number", Spec{Numerical: "asc", FilterPattern: `^b-(\d+)$`, FilterExtract: "${1}"}, `numerical asc, filter ^b-(\d+)$ extract ${1}`},
		{"group 0", Spec{Numerical: "asc", FilterPattern: `\d+`, FilterExtract: "$0"}, `numerical asc, filter \d+ extract $0`},
		{"text around a reference", Spec{SemverRange: "^1", FilterPattern: `^rel-(?P<minor>\d+)$`, FilterExtract: "1.${minor}.0"}, `semver ^1, filter ^rel-(?P<minor>\d+)$ extract 1.${minor}.0`},
		{"$$ is a literal $", Spec{Alphabetical: "asc", FilterPattern: `^x$`, FilterExtract: "$$tss"}, `alphabetical asc, filter ^x$ extract $$tss`},
		{"a lone $ is literal", Spec{Alphabetical: "asc", FilterPattern: `^x$`, FilterExtract: "a$-${"}, `alphabetical asc, filter ^x$ extract a$-${`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Compile(tt.spec)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.String()).To(Equal(tt.want))
		})
	}
}

// TestTemplateRefs: the references are read as regexp.Regexp.Expand reads
// them.
func TestTemplateRefs(t *testing.T) {
	tests := []struct {
		template string
		want     []string
	}{
		{"", nil},
		{"plain", nil},
		{"$ts", []string{"ts"}},
		{"${ts}x", []string{"ts"}},
		{"$1x", []string{"1x"}},
		{"${1}x-$2", []string{"1", "2"}},
		{"$$ts", nil},
		{"$$$ts", []string{"ts"}},
		{"${ts", nil},
		{"${}", nil},
		{"$-$", nil},
		{"$é_1.", []string{"é_1"}},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			NewWithT(t).Expect(templateRefs(tt.template)).To(Equal(tt.want))
		})
	}
}
