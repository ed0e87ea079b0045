package chat

import (
	"github.com/windlass-dev/windlass/internal/notify"
)

// Zoom Team Chat, the Incoming Webhook chatbot (marketplace app "Incoming
// Webhook"): POST to the connection's endpoint URL with the connection's
// verification token, sent as is, in the Authorization header. The query
// parameter format=full asks for the message with a head and a body,
// {"content": {"head": {"text": ..., "sub_head": {"text": ...}}, "body":
// [{"type": "message", "text": ...}, {"type": "fields", "items": [{"key":
// ..., "value": ...}]}]}}; it is added unless the address pins a format.
// The head is the object, the sub head the severity ("error", or "info"
// for anything else, a resolved failure included), the body the text and
// the facts.

type zoomMessage struct {
	Content zoomContent `json:"content"`
}

type zoomContent struct {
	Head zoomHead   `json:"head"`
	Body []zoomPart `json:"body"`
}

type zoomHead struct {
	Text    string   `json:"text"`
	SubHead zoomText `json:"sub_head"`
}

type zoomText struct {
	Text string `json:"text"`
}

// zoomPart is a "message" (Text) or a "fields" (Items) part of the body.
type zoomPart struct {
	Type  string      `json:"type"`
	Text  string      `json:"text,omitempty"`
	Items []zoomField `json:"items,omitempty"`
}

type zoomField struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// zoomTextLimit bounds the message text: Zoom refuses messages over 4,096
// characters.
const zoomTextLimit = 4000

func newZoom(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the Incoming Webhook endpoint URL")
	if err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Token, "the token (the Secret's token key: the connection's verification token)"); err != nil {
		return nil, err
	}
	target := *u
	if q := target.Query(); !q.Has("format") {
		q.Set("format", "full")
		target.RawQuery = q.Encode()
	}
	headers := map[string]string{"Authorization": cfg.Token}
	return func(m notify.Message) (notify.Request, error) {
		return notify.Request{URL: target.String(), Headers: headers, Body: zoomPayload(m)}, nil
	}, nil
}

func zoomPayload(m notify.Message) zoomMessage {
	s := summarize(m)
	severity := "info"
	if s.Failed {
		severity = "error"
	}
	body := []zoomPart{{Type: "message", Text: truncate(s.Text, zoomTextLimit)}}
	if facts := s.facts(); len(facts) > 0 {
		items := make([]zoomField, 0, len(facts))
		for _, f := range facts {
			items = append(items, zoomField{Key: f[0], Value: f[1]})
		}
		body = append(body, zoomPart{Type: "fields", Items: items})
	}
	return zoomMessage{Content: zoomContent{Head: zoomHead{Text: s.Title, SubHead: zoomText{Text: severity}}, Body: body}}
}
