package generator

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Pattern is a parsed pathPattern, "@alias/<pattern>": the folders of the
// source's tree whose path the pattern matches, where each "{name}"
// matches a part of one folder name and any other character itself.
type Pattern struct {
	// Alias names the source whose folders are matched.
	Alias string
	// Names are the capture names, in the order of the pattern.
	Names []string
	re    *regexp.Regexp
}

// captureName is what a capture may be called.
var captureName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParsePattern parses a pathPattern.
func ParsePattern(s string) (*Pattern, error) {
	f, err := parseFrom(s)
	if err != nil {
		return nil, fmt.Errorf("pathPattern: %w", err)
	}
	if len(f.segments) == 0 {
		return nil, fmt.Errorf("pathPattern '%s' matches no folder: name one below the source's root", s)
	}
	p := &Pattern{Alias: f.alias}
	var expr strings.Builder
	expr.WriteString("^")
	rest := strings.Join(f.segments, "/")
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			expr.WriteString(regexp.QuoteMeta(rest))
			break
		}
		expr.WriteString(regexp.QuoteMeta(rest[:open]))
		closing := strings.Index(rest[open:], "}")
		if rest[open] == '}' || closing < 0 {
			return nil, fmt.Errorf("pathPattern '%s' has an unbalanced brace", s)
		}
		name := rest[open+1 : open+closing]
		switch {
		case !captureName.MatchString(name):
			return nil, fmt.Errorf("pathPattern '%s': capture '{%s}' must be a letter or _ followed by letters, digits or _", s, name)
		case slices.Contains(p.Names, name):
			return nil, fmt.Errorf("pathPattern '%s' captures '{%s}' twice", s, name)
		}
		p.Names = append(p.Names, name)
		expr.WriteString(`([^/]+)`)
		rest = rest[open+closing+1:]
	}
	expr.WriteString("$")
	p.re = regexp.MustCompile(expr.String())
	return p, nil
}

// Match is a folder the pattern matched.
type Match struct {
	// Dir is the folder's path in the tree.
	Dir string
	// Values are the captures, as the folder names them.
	Values map[string]string
}

// Matches returns the folders of the tree under root that the pattern
// matches, in lexical order; a captured value that is not a valid label
// value (63 characters at most, letters, digits, "-", "_" and "." inside)
// is an error.
func (p *Pattern) Matches(root string) ([]Match, error) {
	var out []Match
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == root {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		sub := p.re.FindStringSubmatch(rel)
		if sub == nil {
			return nil
		}
		m := Match{Dir: rel, Values: map[string]string{}}
		for i, name := range p.Names {
			if errs := validation.IsValidLabelValue(sub[i+1]); len(errs) > 0 {
				return fmt.Errorf("folder '%s': the value '%s' of {%s} is not a valid label value: %s", rel, sub[i+1], name, strings.Join(errs, "; "))
			}
			m.Values[name] = sub[i+1]
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// placeholder is a "{name}" of a template.
var placeholder = regexp.MustCompile(`\{([^{}]*)\}`)

// Expand replaces each "{name}" of template with values[name], lowercased
// when lower is set; a name without a value is an error.
func Expand(template string, values map[string]string, lower bool) (string, error) {
	var missing string
	out := placeholder.ReplaceAllStringFunc(template, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := values[name]
		if !ok {
			missing = name
			return m
		}
		if lower {
			v = strings.ToLower(v)
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("'%s' uses {%s}, which the pathPattern does not capture", template, missing)
	}
	return out, nil
}
