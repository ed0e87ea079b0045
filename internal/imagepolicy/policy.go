package imagepolicy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/Masterminds/semver/v3"
)

// Spec is an ImagePolicy's choice rule, as plain values (the controller
// converts the API type). Exactly one of SemverRange, Alphabetical and
// Numerical is set.
type Spec struct {
	// SemverRange is policy.semver.range; non-empty selects the semver
	// policy.
	SemverRange string
	// Alphabetical is policy.alphabetical.order: "asc" or "desc"; empty
	// means not this policy (the controller passes "asc", the API default,
	// when the policy is chosen without an order).
	Alphabetical string
	// Numerical is policy.numerical.order: "asc" or "desc"; empty means
	// not this policy.
	Numerical string
	// FilterPattern is filterTags.pattern, a Go (RE2) regular expression,
	// unanchored: a tag must match it to be considered.
	FilterPattern string
	// FilterExtract is filterTags.extract, a template such as "$ts" or
	// "${1}" expanded from the match (regexp.Regexp.ExpandString) into the
	// value that is ordered; empty means the whole tag.
	FilterExtract string
}

// Orders of the alphabetical and numerical policies.
const (
	// Asc elects the greatest value.
	Asc = "asc"
	// Desc elects the smallest value.
	Desc = "desc"
)

type kind int

const (
	semverKind kind = iota
	alphabeticalKind
	numericalKind
)

// Policy is a compiled Spec: it tells candidates from other tags and ranks
// them. It is immutable and safe for concurrent use.
type Policy struct {
	spec       Spec
	kind       kind
	desc       bool
	constraint *semver.Constraints
	filter     *regexp.Regexp // nil: every tag passes
}

// InvalidSpecError is a Spec that cannot be compiled. It is terminal: the
// object must change before a retry can succeed.
type InvalidSpecError struct {
	// Field is the API path of the faulty field, e.g. "policy.semver.range".
	Field string
	// Value is the field's value; empty when the fault is a missing field.
	Value string
	// Err says what is wrong.
	Err error
}

// Error names the field, its value when there is one, and the fault.
func (e *InvalidSpecError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err)
}

// Unwrap returns the fault.
func (e *InvalidSpecError) Unwrap() error { return e.Err }

func invalid(field, value string, err error) *InvalidSpecError {
	return &InvalidSpecError{Field: field, Value: value, Err: err}
}

// Compile checks s and builds its Policy. Every error is an
// *InvalidSpecError.
func Compile(s Spec) (*Policy, error) {
	p := &Policy{spec: s}
	if err := p.compileChoice(); err != nil {
		return nil, err
	}
	if err := p.compileFilter(); err != nil {
		return nil, err
	}
	return p, nil
}

// compileChoice sets the policy's kind, order and range.
func (p *Policy) compileChoice() error {
	var chosen []string
	s := p.spec
	if s.SemverRange != "" {
		chosen = append(chosen, "semver")
		c, err := semver.NewConstraint(s.SemverRange)
		if err != nil {
			return invalid("policy.semver.range", s.SemverRange, err)
		}
		p.kind, p.constraint = semverKind, c
	}
	if s.Alphabetical != "" {
		chosen = append(chosen, "alphabetical")
		p.kind = alphabeticalKind
		if err := p.setOrder("policy.alphabetical.order", s.Alphabetical); err != nil {
			return err
		}
	}
	if s.Numerical != "" {
		chosen = append(chosen, "numerical")
		p.kind = numericalKind
		if err := p.setOrder("policy.numerical.order", s.Numerical); err != nil {
			return err
		}
	}
	if len(chosen) != 1 {
		got := "none"
		if len(chosen) > 1 {
			got = strings.Join(chosen, " and ")
		}
		return invalid("policy", "", fmt.Errorf("exactly one of semver, alphabetical and numerical must be set, got %s", got))
	}
	return nil
}

func (p *Policy) setOrder(field, order string) error {
	switch order {
	case Asc:
		p.desc = false
	case Desc:
		p.desc = true
	default:
		return invalid(field, order, errors.New(`must be "asc" or "desc"`))
	}
	return nil
}

// compileFilter compiles filterTags and checks that the extract template
// names only groups the pattern has.
func (p *Policy) compileFilter() error {
	s := p.spec
	if s.FilterPattern == "" {
		if s.FilterExtract != "" {
			return invalid("filterTags.extract", s.FilterExtract, errors.New("needs filterTags.pattern to extract from"))
		}
		return nil
	}
	re, err := regexp.Compile(s.FilterPattern)
	if err != nil {
		return invalid("filterTags.pattern", s.FilterPattern, err)
	}
	for _, ref := range templateRefs(s.FilterExtract) {
		if !hasGroup(re, ref) {
			return invalid("filterTags.extract", s.FilterExtract, fmt.Errorf("names %q, which is no group of filterTags.pattern", ref))
		}
	}
	p.filter = re
	return nil
}

// templateRefs lists the group references of an extract template as
// regexp.Regexp.Expand reads them: $name and ${name}, where a name is a run
// of letters, digits and underscores, $$ is a literal $, and a $ that
// starts no reference is copied as is.
func templateRefs(template string) []string {
	var refs []string
	for {
		_, after, found := strings.Cut(template, "$")
		if !found {
			return refs
		}
		template = after
		if strings.HasPrefix(template, "$") {
			template = template[1:]
			continue
		}
		if name, rest, ok := readRef(template); ok {
			refs = append(refs, name)
			template = rest
		}
	}
}

// readRef reads the name of the reference that s, the text after a $,
// starts with, and the text after the reference.
func readRef(s string) (name, rest string, ok bool) {
	brace := strings.HasPrefix(s, "{")
	if brace {
		s = s[1:]
	}
	rest = strings.TrimLeftFunc(s, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
	})
	name = s[:len(s)-len(rest)]
	if name == "" {
		return "", "", false
	}
	if brace {
		if !strings.HasPrefix(rest, "}") {
			return "", "", false
		}
		rest = rest[1:]
	}
	return name, rest, true
}

// hasGroup reports whether the reference name resolves to a group of re,
// as regexp.Regexp.Expand resolves it: by number when name is a decimal
// number without leading zeros below 10^8, else by group name.
func hasGroup(re *regexp.Regexp, name string) bool {
	if num := groupNumber(name); num >= 0 {
		return num <= re.NumSubexp()
	}
	return slices.Contains(re.SubexpNames(), name)
}

// groupNumber is the number name denotes, or -1 when it is a name.
func groupNumber(name string) int {
	if len(name) > 1 && name[0] == '0' {
		return -1
	}
	num := 0
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' || num >= 1e8 {
			return -1
		}
		num = num*10 + int(name[i]-'0')
	}
	return num
}

// String describes the policy briefly, e.g. "semver ^1.0" or "numerical
// asc, filter ^main-[a-f0-9]+-(?P<ts>[0-9]+) extract $ts".
func (p *Policy) String() string {
	return p.describe(func(s string) string { return s })
}

// describe is String with each free-form value passed through quote.
func (p *Policy) describe(quote func(string) string) string {
	var b strings.Builder
	switch p.kind {
	case semverKind:
		b.WriteString("semver " + quote(p.spec.SemverRange))
	case alphabeticalKind:
		b.WriteString("alphabetical " + p.order())
	case numericalKind:
		b.WriteString("numerical " + p.order())
	}
	if p.filter != nil {
		b.WriteString(", filter " + quote(p.spec.FilterPattern))
	}
	if p.spec.FilterExtract != "" {
		b.WriteString(" extract " + quote(p.spec.FilterExtract))
	}
	return b.String()
}

func (p *Policy) order() string {
	if p.desc {
		return Desc
	}
	return Asc
}
