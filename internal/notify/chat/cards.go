package chat

import (
	"github.com/windlass-dev/windlass/internal/notify"
)

// Microsoft Teams: Workflows ("When a Teams webhook request is received")
// take Adaptive Cards only; the documented request, which the older
// Incoming Webhook connectors also take, is a message
// {"type": "message", "attachments": [{"contentType":
// "application/vnd.microsoft.card.adaptive", "contentUrl": null,
// "content": <AdaptiveCard>}]} (learn.microsoft.com, "Create and send
// messages"). The card (adaptivecards.io schema) has a TextBlock title
// colored "Attention" or "Good", a TextBlock with the text, and a
// FactSet of {title, value} facts; "msteams": {"width": "Full"} widens it.
// Teams refuses messages over 28 KB.

const (
	adaptiveContentType = "application/vnd.microsoft.card.adaptive"
	adaptiveSchema      = "http://adaptivecards.io/schemas/adaptive-card.json"
	adaptiveVersion     = "1.4"
	teamsTextLimit      = 16000
)

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string       `json:"contentType"`
	ContentURL  *string      `json:"contentUrl"`
	Content     adaptiveCard `json:"content"`
}

type adaptiveCard struct {
	Schema  string            `json:"$schema"`
	Type    string            `json:"type"`
	Version string            `json:"version"`
	Body    []any             `json:"body"`
	MSTeams map[string]string `json:"msteams,omitempty"`
}

type textBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Weight string `json:"weight,omitempty"`
	Size   string `json:"size,omitempty"`
	Color  string `json:"color,omitempty"`
	Wrap   bool   `json:"wrap"`
}

type factSet struct {
	Type  string `json:"type"`
	Facts []fact `json:"facts"`
}

type fact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

func newTeams(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the Workflows webhook URL")
	if err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		return notify.Request{URL: u.String(), Body: teamsPayload(m)}, nil
	}, nil
}

func teamsPayload(m notify.Message) teamsMessage {
	s := summarize(m)
	color := "Good"
	if s.Failed {
		color = "Attention"
	}
	body := []any{
		textBlock{Type: "TextBlock", Text: s.Title, Weight: "Bolder", Size: "Medium", Color: color, Wrap: true},
		textBlock{Type: "TextBlock", Text: truncate(s.Text, teamsTextLimit), Wrap: true},
	}
	if facts := s.facts(); len(facts) > 0 {
		set := factSet{Type: "FactSet"}
		for _, f := range facts {
			set.Facts = append(set.Facts, fact{Title: f[0], Value: f[1]})
		}
		body = append(body, set)
	}
	card := adaptiveCard{Schema: adaptiveSchema, Type: "AdaptiveCard", Version: adaptiveVersion, Body: body,
		MSTeams: map[string]string{"width": "Full"}}
	return teamsMessage{Type: "message", Attachments: []teamsAttachment{{ContentType: adaptiveContentType, Content: card}}}
}

// Google Chat incoming webhooks (developers.google.com/chat, "Google Chat
// messages overview" and webhooks): a text message {"text": ...}, with
// Chat's formatting (*bold*). Text is chosen over cardsV2: webhooks take
// it everywhere and it carries everything the summary has. Chat has no
// message colors.

const googleChatTextLimit = 4000

func newGoogleChat(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the space's webhook URL")
	if err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		s := summarize(m)
		text := joinNonEmpty("\n", "*"+s.Title+"*", s.Text, s.details())
		return notify.Request{URL: u.String(), Body: map[string]string{"text": truncate(text, googleChatTextLimit)}}, nil
	}, nil
}

// Lark (and Feishu) custom bots (open.larksuite.com, "Use custom bots in a
// group"): {"msg_type": "interactive", "card": {...}}, a message card with
// a header {title: {tag: "plain_text", content}, template: <color>} and
// elements, here "div" elements whose text is {tag: "lark_md", content}.
// The header is "red" for a failure and "green" otherwise.

const larkTextLimit = 16000

type larkMessage struct {
	MsgType string   `json:"msg_type"`
	Card    larkCard `json:"card"`
}

type larkCard struct {
	Config   map[string]bool `json:"config"`
	Header   larkHeader      `json:"header"`
	Elements []larkElement   `json:"elements"`
}

type larkHeader struct {
	Title    larkText `json:"title"`
	Template string   `json:"template"`
}

type larkText struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

type larkElement struct {
	Tag  string   `json:"tag"`
	Text larkText `json:"text"`
}

func newLark(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the custom bot's webhook URL")
	if err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		return notify.Request{URL: u.String(), Body: larkPayload(m)}, nil
	}, nil
}

func larkPayload(m notify.Message) larkMessage {
	s := summarize(m)
	template := "green"
	if s.Failed {
		template = "red"
	}
	elements := []larkElement{{Tag: "div", Text: larkText{Tag: "lark_md", Content: truncate(s.Text, larkTextLimit)}}}
	if details := s.details(); details != "" {
		elements = append(elements, larkElement{Tag: "div", Text: larkText{Tag: "lark_md", Content: truncate(details, larkTextLimit)}})
	}
	return larkMessage{MsgType: "interactive", Card: larkCard{
		Config:   map[string]bool{"wide_screen_mode": true},
		Header:   larkHeader{Title: larkText{Tag: "plain_text", Content: s.Title}, Template: template},
		Elements: elements,
	}}
}
