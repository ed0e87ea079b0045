package notify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ObjectID names the event's object as the reference's messages do:
// "kustomization/apps.flux-system".
func ObjectID(m Message) string {
	o := m.InvolvedObject
	return strings.ToLower(o.Kind) + "/" + o.Name + "." + o.Namespace
}

// Text is the message's text for people: the event's message, then
// "Resolved: " before it when it resolves a failure, and a line saying
// how many events were folded into it.
func Text(m Message) string {
	text := m.Message
	if m.Resolves {
		text = "Resolved: " + text
	}
	if m.Folded > 0 {
		text += fmt.Sprintf("\n(and %d more like it)", m.Folded)
	}
	return text
}

// Fields returns the event's metadata as sorted key-value pairs, for
// providers that show them as fields.
func Fields(m Message) [][2]string {
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][2]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, [2]string{k, m.Metadata[k]})
	}
	return out
}

// IsError tells whether the message reports a failure (and does not
// resolve one).
func IsError(m Message) bool {
	return m.Severity == "error" && !m.Resolves
}

// WireEvent is the event of m in its wire format
// (event.toolkit.fluxcd.io/v1beta1) as JSON, its message being Text(m),
// for providers that send the event itself.
func WireEvent(m Message) ([]byte, error) {
	e := m.Event
	e.Message = Text(m)
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encoding the event: %w", err)
	}
	return body, nil
}
