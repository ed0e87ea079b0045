package sops

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/ini.v1"
)

// Dotenv and INI documents hold strings only and keep the metadata
// flattened (see flatten.go): dotenv as `sops_*` entries among the others,
// INI as the entries of a `[sops]` section. In both, a newline inside a
// value is written as the two characters `\n`.

// parseDotenvDocument reads KEY=VALUE lines. Empty lines are skipped, lines
// starting with '#' are comments, and the key ends at the first '='.
func parseDotenvDocument(data []byte) (*parsedDocument, error) {
	root := &node{kind: kindMap}
	var meta []flatEntry
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			root.children = append(root.children, &node{kind: kindComment, value: string(line[1:])})
			continue
		}
		key, value, ok := strings.Cut(string(line), "=")
		if !ok {
			return nil, fmt.Errorf("line %d is not KEY=VALUE", i+1)
		}
		value = strings.ReplaceAll(value, `\n`, "\n")
		if name, ok := strings.CutPrefix(key, metadataPrefix); ok {
			meta = append(meta, flatEntry{key: name, value: value})
			continue
		}
		root.children = append(root.children, &node{kind: kindValue, key: key, value: value})
	}
	doc := &parsedDocument{roots: []*node{root}, render: func() ([]byte, error) { return writeDotenv(root), nil }}
	if len(meta) == 0 {
		return doc, nil
	}
	var err error
	if doc.meta, err = unflatten(meta); err != nil {
		return nil, err
	}
	return doc, nil
}

func writeDotenv(root *node) []byte {
	var buf bytes.Buffer
	for _, c := range root.children {
		if c.kind == kindComment {
			buf.WriteString("#" + commentString(c.plain) + "\n")
			continue
		}
		value := flatString(c.plain)
		if s, ok := c.plain.(string); ok {
			value = strings.ReplaceAll(s, "\n", `\n`)
		}
		buf.WriteString(c.key + "=" + value + "\n")
	}
	return buf.Bytes()
}

// flatString renders a decrypted value in a format that only has strings.
func flatString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case float64:
		s := strconv.FormatFloat(v, 'G', -1, 64)
		if !strings.ContainsAny(s, ".E") {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
		return s
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339)
	default:
		return fmt.Sprint(v)
	}
}

// iniOptions are the options INI documents are read and written with.
var iniOptions = ini.LoadOptions{AllowNonUniqueSections: true}

// parseINIDocument reads an INI document: every section (the unnamed DEFAULT
// one first) is a map of its keys, preceded by the section comment and with
// each key's comment after the key.
func parseINIDocument(data []byte) (*parsedDocument, error) {
	file, err := ini.LoadSources(iniOptions, data)
	if err != nil {
		return nil, errSyntax
	}
	root := &node{kind: kindMap}
	var meta []flatEntry
	found := false
	for _, section := range file.Sections() {
		if section.Name() != metadataKey {
			root.children = append(root.children, iniSection(section))
			continue
		}
		if found {
			return nil, errors.New("the document has more than one [sops] section")
		}
		found = true
		for _, k := range section.Keys() {
			meta = append(meta, flatEntry{key: k.Name(), value: strings.ReplaceAll(k.Value(), `\n`, "\n")})
		}
	}
	doc := &parsedDocument{roots: []*node{root}, render: func() ([]byte, error) { return writeINI(root) }}
	if found {
		if doc.meta, err = unflatten(meta); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func iniSection(section *ini.Section) *node {
	n := &node{kind: kindMap, key: section.Name()}
	if section.Comment != "" {
		n.children = append(n.children, &node{kind: kindComment, value: stripINIComment(section.Comment)})
	}
	for _, k := range section.Keys() {
		n.children = append(n.children, &node{kind: kindValue, key: k.Name(), value: k.Value()})
		if k.Comment != "" {
			n.children = append(n.children, &node{kind: kindComment, value: stripINIComment(k.Comment)})
		}
	}
	return n
}

// stripINIComment removes the comment marker, and the spaces after it, from
// the first line of a comment.
func stripINIComment(c string) string {
	switch {
	case strings.HasPrefix(c, ";"):
		return strings.TrimLeft(c, "; ")
	case strings.HasPrefix(c, "#"):
		return strings.TrimLeft(c, "# ")
	}
	return c
}

// writeINI writes the sections back. A section comment is the first child
// of the section; any other comment belongs to the key before it.
func writeINI(root *node) ([]byte, error) {
	file := ini.Empty(iniOptions)
	file.DeleteSection(ini.DefaultSection)
	for _, sec := range root.children {
		if sec.kind != kindMap {
			continue
		}
		section, err := file.NewSection(sec.key)
		if err != nil {
			return nil, errors.New("cannot write an INI section")
		}
		var last *ini.Key
		for i, c := range sec.children {
			switch {
			case c.kind == kindComment && i == 0:
				section.Comment = commentString(c.plain)
			case c.kind == kindComment:
				if last != nil {
					last.Comment = commentString(c.plain)
				}
			default:
				if last, err = section.NewKey(c.key, flatString(c.plain)); err != nil {
					return nil, errors.New("cannot write an INI key")
				}
			}
		}
	}
	var buf bytes.Buffer
	if _, err := file.WriteTo(&buf); err != nil {
		return nil, errors.New("cannot write the INI document")
	}
	return buf.Bytes(), nil
}
