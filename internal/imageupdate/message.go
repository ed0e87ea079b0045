package imageupdate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
)

// MaxMessageBytes bounds a rendered commit message; the output of a template
// is cut there.
const MaxMessageBytes = 64 << 10

// removedField is the template field that no longer exists.
const removedField = "Updated"

// ErrRemovedTemplateField is returned for a message template that uses the
// removed field .Updated; .Changed replaces it.
var ErrRemovedTemplateField = errors.New("the message template uses the removed field .Updated; use .Changed instead")

// TemplateData is what a commit message template sees.
type TemplateData struct {
	// AutomationObject is the ImageUpdateAutomation; it prints "ns/name".
	AutomationObject types.NamespacedName
	// Changed is what the update changed.
	Changed *Result
	// Values are the automation's messageTemplateValues.
	Values map[string]string
}

// ParseMessageTemplate parses a commit message template and refuses one that
// uses a removed field (errors.Is(err, ErrRemovedTemplateField)). A controller
// can call it before any Git work to report a bad template early.
func ParseMessageTemplate(tmpl string) (*template.Template, error) {
	t, err := template.New("commit message").Parse(tmpl)
	if err != nil {
		return nil, fmt.Errorf("parsing the commit message template: %w", err)
	}
	for _, defined := range t.Templates() {
		if defined.Tree != nil && usesField(defined.Tree.Root, removedField) {
			return nil, ErrRemovedTemplateField
		}
	}
	return t, nil
}

// RenderMessage renders a commit message. An empty (or blank) template gives
// the default message: the subject "Update images", then a line
// "- <file>: <old> -> <new>" per change. Output past MaxMessageBytes is cut.
func RenderMessage(tmpl string, data TemplateData) (string, error) {
	if data.Changed == nil {
		data.Changed = newResult(nil, nil)
	}
	if strings.TrimSpace(tmpl) == "" {
		return capMessage([]byte(defaultMessage(data.Changed))), nil
	}
	t, err := ParseMessageTemplate(tmpl)
	if err != nil {
		return "", err
	}
	// One byte more than the cap tells capMessage to cut (and not to split
	// a character).
	out := &cappedBuffer{limit: MaxMessageBytes + 1}
	if err := t.Execute(out, data); err != nil && !out.full {
		return "", fmt.Errorf("rendering the commit message template: %s", shorten(err.Error()))
	}
	return capMessage(out.buf.Bytes()), nil
}

// maxErrorBytes bounds the text of a template error, which can quote a value
// of the data in full.
const maxErrorBytes = 1 << 10

// shorten cuts a text to maxErrorBytes without splitting a character.
func shorten(text string) string {
	if len(text) <= maxErrorBytes {
		return text
	}
	return strings.ToValidUTF8(text[:maxErrorBytes], "") + "..."
}

// defaultMessage lists every change with its file, in file and line order.
func defaultMessage(r *Result) string {
	var b strings.Builder
	b.WriteString("Update images\n")
	if !r.Empty() {
		b.WriteString("\n")
	}
	for _, c := range r.changes {
		fmt.Fprintf(&b, "- %s: %s -> %s\n", c.file, c.change.OldValue, c.change.NewValue)
		if b.Len() > MaxMessageBytes {
			break
		}
	}
	return b.String()
}

// capMessage cuts a message to MaxMessageBytes without splitting a character.
func capMessage(msg []byte) string {
	if len(msg) <= MaxMessageBytes {
		return string(msg)
	}
	msg = msg[:MaxMessageBytes]
	for i := 1; i < utf8.UTFMax && len(msg) > 0; i++ {
		if r, size := utf8.DecodeLastRune(msg); r != utf8.RuneError || size > 1 {
			break
		}
		msg = msg[:len(msg)-1]
	}
	return string(msg)
}

// errMessageFull stops a template once the message is long enough.
var errMessageFull = errors.New("commit message too long")

// cappedBuffer keeps up to limit bytes, then fails every write so that the
// template stops.
type cappedBuffer struct {
	buf   bytes.Buffer
	limit int
	full  bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.limit - c.buf.Len()
	if len(p) > room {
		c.buf.Write(p[:room])
		c.full = true
		return room, errMessageFull
	}
	return c.buf.Write(p)
}

// usesField tells whether a template tree refers to a field of that name, as
// .name, .a.name, $x.name or (pipeline).name.
func usesField(node parse.Node, name string) bool {
	switch n := node.(type) {
	case *parse.ListNode:
		return n != nil && slices.ContainsFunc(n.Nodes, func(c parse.Node) bool { return usesField(c, name) })
	case *parse.ActionNode:
		return usesField(n.Pipe, name)
	case *parse.PipeNode:
		return n != nil && slices.ContainsFunc(n.Cmds, func(c *parse.CommandNode) bool { return usesField(c, name) })
	case *parse.CommandNode:
		return slices.ContainsFunc(n.Args, func(c parse.Node) bool { return usesField(c, name) })
	case *parse.FieldNode:
		return hasField(n.Ident, name)
	case *parse.VariableNode:
		return hasField(n.Ident[1:], name)
	case *parse.ChainNode:
		return hasField(n.Field, name) || usesField(n.Node, name)
	case *parse.IfNode:
		return branchUsesField(&n.BranchNode, name)
	case *parse.RangeNode:
		return branchUsesField(&n.BranchNode, name)
	case *parse.WithNode:
		return branchUsesField(&n.BranchNode, name)
	case *parse.TemplateNode:
		return usesField(n.Pipe, name)
	}
	return false
}

// hasField tells whether a chain of field names holds name. A name right
// after "Values" is a key of .Values (messageTemplateValues), not a field.
func hasField(idents []string, name string) bool {
	for i, ident := range idents {
		if ident == name && (i == 0 || idents[i-1] != "Values") {
			return true
		}
	}
	return false
}

func branchUsesField(b *parse.BranchNode, name string) bool {
	return usesField(b.Pipe, name) || usesField(b.List, name) || usesField(b.ElseList, name)
}
