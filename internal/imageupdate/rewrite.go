package imageupdate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// lineSpan is one line of a file: data[start:end], without its line break.
type lineSpan struct{ start, end int }

// edit replaces data[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// located is a change with the place it was made, kept to order changes and
// to know which policy made them.
type located struct {
	file   string
	line   int
	object ObjectIdentifier
	policy PolicyKey
	change Change
}

// filePlan is what one file needs: the edits to make and the changes they
// are, or the markers that stop the whole run.
type filePlan struct {
	edits   []edit
	changes []located
	errs    []*MarkerError
}

// markedNode is a YAML node whose line comment holds the marker key.
type markedNode struct {
	node    *yaml.Node
	comment string // the first line of the node's line comment
	isKey   bool   // the node is a mapping key
	inFlow  bool   // the node is inside a flow collection
}

// valueSpan is where a marked scalar stands in the file, and how it is quoted.
type valueSpan struct {
	start, end int
	style      yaml.Style
}

var (
	utf8BOM = []byte("\xEF\xBB\xBF")
	nel     = []byte("\xC2\x85")     // NEXT LINE, a YAML 1.1 line break
	lsep    = []byte("\xE2\x80\xA8") // LINE SEPARATOR
	psep    = []byte("\xE2\x80\xA9") // PARAGRAPH SEPARATOR
)

// planFile finds the markers of one file and plans their edits. It reads
// nothing but data and changes nothing.
func planFile(file string, data []byte, refs map[PolicyKey]ImageRef) filePlan {
	if !bytes.Contains(data, []byte(markerKey)) {
		return filePlan{}
	}
	docs, err := parseDocuments(data)
	if err != nil {
		reason := "the file holds an image policy marker but is not valid YAML: " + err.Error()
		return filePlan{errs: []*MarkerError{{File: file, Reason: reason}}}
	}
	p := &planner{file: file, data: data, lines: splitLines(data), refs: refs, claimed: map[int]bool{}}
	var loose []string
	for _, doc := range docs {
		var marked []markedNode
		collectMarked(doc, false, false, &marked, &loose)
		id := identify(doc)
		for _, m := range marked {
			p.plan1(m, id)
		}
	}
	p.reconcile(loose)
	sort.SliceStable(p.plan.errs, func(i, j int) bool { return p.plan.errs[i].Line < p.plan.errs[j].Line })
	return p.plan
}

// parseDocuments decodes every document of a YAML stream. A panic of the
// parser on hostile input is turned into an error.
func parseDocuments(data []byte) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &doc)
	}
}

// collectMarked gathers the nodes whose line comment holds the marker key,
// and, in loose, the other comment lines (head, foot, and further lines of a
// line comment) that hold it.
func collectMarked(n *yaml.Node, isKey, inFlow bool, marked *[]markedNode, loose *[]string) {
	first, rest, _ := strings.Cut(n.LineComment, "\n")
	if strings.Contains(first, markerKey) {
		*marked = append(*marked, markedNode{node: n, comment: first, isKey: isKey, inFlow: inFlow})
	}
	for _, comment := range []string{n.HeadComment, rest, n.FootComment} {
		for line := range strings.SplitSeq(comment, "\n") {
			if strings.Contains(line, markerKey) {
				*loose = append(*loose, line)
			}
		}
	}
	childInFlow := inFlow || n.Style&yaml.FlowStyle != 0
	for i, child := range n.Content {
		collectMarked(child, n.Kind == yaml.MappingNode && i%2 == 0, childInFlow, marked, loose)
	}
}

// planner plans the edits of one file.
type planner struct {
	file  string
	data  []byte
	lines []lineSpan
	refs  map[PolicyKey]ImageRef
	plan  filePlan
	// claimed are the lines (1-based) whose trailing comment is a marker
	// found on a node.
	claimed map[int]bool
}

func (p *planner) fail(line int, reason string) {
	p.plan.errs = append(p.plan.errs, &MarkerError{File: p.file, Line: line, Reason: reason})
}

// plan1 checks one marked node and, when its policy is selected and the value
// differs, plans its edit.
func (p *planner) plan1(m markedNode, id ObjectIdentifier) {
	line := m.node.Line
	p.claimed[line] = true
	mk, err := parseMarker(m.comment)
	if err != nil {
		p.fail(line, err.Error())
		return
	}
	span, err := p.locate(m)
	if err != nil {
		p.fail(line, err.Error())
		return
	}
	ref, selected := p.refs[mk.policy]
	if !selected {
		return
	}
	value, err := valueFor(ref, mk.field, mk.policy)
	if err != nil {
		p.fail(line, err.Error())
		return
	}
	if value == m.node.Value {
		return
	}
	p.plan.edits = append(p.plan.edits, edit{start: span.start, end: span.end, text: quoteAs(span.style, value)})
	p.plan.changes = append(p.plan.changes, located{
		file: p.file, line: line, object: id, policy: mk.policy,
		change: Change{OldValue: m.node.Value, NewValue: value, Setter: mk.setter},
	})
}

// reconcile reports the marker comments the parser did not leave on a value.
// A comment line that stands alone in the file (a commented-out line) is no
// marker. Any other comes from the end of a line that holds no scalar value,
// such as an empty list item ("- # {...}") or a document start ("--- # {...}").
func (p *planner) reconcile(loose []string) {
	for _, comment := range loose {
		comment = strings.TrimSpace(comment)
		if p.standsAlone(comment) {
			continue
		}
		line := p.trailingLine(comment)
		p.claimed[line] = true
		p.fail(line, "the marker is not on a scalar value (an empty list item, a document start or a key with no value)")
	}
}

// standsAlone tells whether comment is a whole line of the file.
func (p *planner) standsAlone(comment string) bool {
	for _, ls := range p.lines {
		if strings.TrimSpace(string(p.data[ls.start:ls.end])) == comment {
			return true
		}
	}
	return false
}

// trailingLine returns the first unclaimed line (1-based) that ends with
// comment after some content, or 0.
func (p *planner) trailingLine(comment string) int {
	for i, ls := range p.lines {
		text := strings.TrimRight(string(p.data[ls.start:ls.end]), " \t")
		if !p.claimed[i+1] && strings.HasSuffix(text, comment) {
			return i + 1
		}
	}
	return 0
}

// shapeError tells why a marked node is not a scalar value the marker can set.
func shapeError(m markedNode) error {
	n := m.node
	switch {
	case n.Kind == yaml.AliasNode:
		return errors.New("the marked value is an alias (*name); mark the anchored value instead")
	case n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode:
		return errors.New("the marked value is a collection, not a scalar")
	case n.Kind != yaml.ScalarNode:
		return errors.New("the marker is not on a scalar value")
	case m.isKey:
		return errors.New("the marked line holds a key with no value on it")
	case m.inFlow:
		return errors.New("the marked value is inside a flow collection ([...] or {...})")
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return errors.New("the marked value is a block scalar (| or >)")
	}
	return nil
}

// locate finds the bytes of a marked scalar on its line, and checks that they
// are the whole value and that the marker comment follows them.
func (p *planner) locate(m markedNode) (valueSpan, error) {
	if err := shapeError(m); err != nil {
		return valueSpan{}, err
	}
	n := m.node
	errLocate := errors.New("cannot find the marked value on its line")
	if n.Line < 1 || n.Line > len(p.lines) {
		return valueSpan{}, errLocate
	}
	ls := p.lines[n.Line-1]
	line := p.data[ls.start:ls.end]
	pos, ok := columnOffset(line, n.Column, n.Line == 1 && bytes.HasPrefix(p.data, utf8BOM))
	if !ok {
		return valueSpan{}, errLocate
	}
	pos = skipProperties(line, pos)
	end, err := scalarEnd(line, pos, n.Style)
	if err != nil {
		return valueSpan{}, err
	}
	if pos == end {
		return valueSpan{}, errors.New("the marked line has no value")
	}
	if !spanHolds(line[pos:end], n) {
		return valueSpan{}, errors.New("the marked value spans several lines")
	}
	if strings.TrimSpace(string(line[end:])) != strings.TrimSpace(m.comment) || !startsWithBlank(line[end:]) {
		return valueSpan{}, errors.New("the marker comment does not follow the value on its line")
	}
	return valueSpan{start: ls.start + pos, end: ls.start + end, style: n.Style}, nil
}

// columnOffset turns a 1-based column, counted in characters as the parser
// counts them, into a byte offset on line. The parser does not count a
// leading byte order mark.
func columnOffset(line []byte, column int, bom bool) (int, bool) {
	pos := 0
	if bom {
		pos = len(utf8BOM)
	}
	for c := 1; c < column; c++ {
		if pos >= len(line) {
			return 0, false
		}
		_, size := utf8.DecodeRune(line[pos:])
		pos += size
	}
	return pos, pos < len(line)
}

// skipProperties steps over an anchor (&a) and a tag (!t) before a value.
func skipProperties(line []byte, pos int) int {
	for pos < len(line) && (line[pos] == '&' || line[pos] == '!') {
		for pos < len(line) && !isBlank(line[pos]) {
			pos++
		}
		for pos < len(line) && isBlank(line[pos]) {
			pos++
		}
	}
	return pos
}

// scalarEnd returns where the scalar starting at pos ends on line.
func scalarEnd(line []byte, pos int, style yaml.Style) (int, error) {
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		return doubleQuotedEnd(line, pos)
	case style&yaml.SingleQuotedStyle != 0:
		return singleQuotedEnd(line, pos)
	}
	for i := pos + 1; i < len(line); i++ {
		if line[i] == '#' && isBlank(line[i-1]) {
			return pos + len(bytes.TrimRight(line[pos:i], " \t")), nil
		}
	}
	return 0, errors.New("the marked value spans several lines")
}

var errQuotedContinues = errors.New("the quoted value continues on the next line")

func doubleQuotedEnd(line []byte, pos int) (int, error) {
	if pos >= len(line) || line[pos] != '"' {
		return 0, errors.New("cannot find the opening quote of the marked value")
	}
	for i := pos + 1; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errQuotedContinues
}

func singleQuotedEnd(line []byte, pos int) (int, error) {
	if pos >= len(line) || line[pos] != '\'' {
		return 0, errors.New("cannot find the opening quote of the marked value")
	}
	for i := pos + 1; i < len(line); i++ {
		if line[i] != '\'' {
			continue
		}
		if i+1 < len(line) && line[i+1] == '\'' {
			i++
			continue
		}
		return i + 1, nil
	}
	return 0, errQuotedContinues
}

// spanHolds tells whether the bytes found for a scalar decode to its value,
// which proves they are the whole value.
func spanHolds(span []byte, n *yaml.Node) bool {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		return string(span) == n.Value
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(span, &doc); err != nil || len(doc.Content) != 1 {
		return false
	}
	return doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Value == n.Value
}

// quoteAs writes value in the quoting style of the value it replaces. The
// value has no character that needs escaping in any style (see valueFor).
func quoteAs(style yaml.Style, value string) string {
	switch {
	case style&yaml.DoubleQuotedStyle != 0:
		return `"` + value + `"`
	case style&yaml.SingleQuotedStyle != 0:
		return "'" + value + "'"
	}
	return value
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

func startsWithBlank(b []byte) bool { return len(b) > 0 && isBlank(b[0]) }

// splitLines splits data on the line breaks the YAML parser counts: CRLF, CR,
// LF, and the YAML 1.1 breaks NEL, LS and PS. Positions then match the
// parser's line numbers.
func splitLines(data []byte) []lineSpan {
	var lines []lineSpan
	start := 0
	for i := 0; i < len(data); {
		n := breakLength(data[i:])
		if n == 0 {
			i++
			continue
		}
		lines = append(lines, lineSpan{start: start, end: i})
		i += n
		start = i
	}
	return append(lines, lineSpan{start: start, end: len(data)})
}

// breakLength is the length of the line break at the start of b, or 0.
func breakLength(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("\r\n")):
		return 2
	case b[0] == '\r' || b[0] == '\n':
		return 1
	case bytes.HasPrefix(b, nel):
		return len(nel)
	case bytes.HasPrefix(b, lsep) || bytes.HasPrefix(b, psep):
		return len(lsep)
	}
	return 0
}

// applyEdits returns data with the edits made. Edits do not overlap: each is
// the value of a different line.
func applyEdits(data []byte, edits []edit) []byte {
	sorted := append([]edit(nil), edits...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start < sorted[j].start })
	var out bytes.Buffer
	out.Grow(len(data))
	last := 0
	for _, e := range sorted {
		out.Write(data[last:e.start])
		out.WriteString(e.text)
		last = e.end
	}
	out.Write(data[last:])
	return out.Bytes()
}

// identify returns the identity of the object a YAML document holds, as far
// as the document gives it: apiVersion, kind, metadata.namespace and
// metadata.name. A document that is not such an object gives the zero value.
func identify(doc *yaml.Node) ObjectIdentifier {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return ObjectIdentifier{}
	}
	root := doc.Content[0]
	id := ObjectIdentifier{APIVersion: scalarAt(root, "apiVersion"), Kind: scalarAt(root, "kind")}
	if meta := valueAt(root, "metadata"); meta != nil {
		id.Namespace = scalarAt(meta, "namespace")
		id.Name = scalarAt(meta, "name")
	}
	return id
}

// valueAt returns the value of key in a mapping node, or nil.
func valueAt(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalarAt returns the scalar value of key in a mapping node, or "".
func scalarAt(m *yaml.Node, key string) string {
	if v := valueAt(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}
