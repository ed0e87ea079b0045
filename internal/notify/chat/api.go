package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"

	"github.com/windlass-dev/windlass/internal/notify"
)

// The types of this file call a service's API with a token: the address
// is the service's base URL (or its endpoint, for webex) and the channel
// names the room, chat or stream.

// Matrix (spec.matrix.org, Client-Server API, "PUT
// /_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}"): an
// m.room.message event {"msgtype": "m.text", "body": ...} sent with the
// access token as "Authorization: Bearer". The server treats a repeated
// transaction id as the same request, so the id is a hash of the message:
// a retry does not post it twice.

func newMatrix(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the homeserver URL, e.g. https://matrix.org")
	if err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Token, "the token (the Secret's token key: an access token)"); err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Channel, "the channel (spec.channel: the room id, !id:server)"); err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		txn, err := transactionID(m)
		if err != nil {
			return notify.Request{}, err
		}
		path := "/_matrix/client/v3/rooms/" + url.PathEscape(cfg.Channel) + "/send/m.room.message/" + txn
		body := map[string]string{"msgtype": "m.text", "body": summarize(m).plain()}
		return notify.Request{Method: http.MethodPut, URL: join(u, path), Body: body, Headers: bearer(cfg.Token)}, nil
	}, nil
}

// transactionID identifies m: the same message gives the same id.
func transactionID(m notify.Message) (string, error) {
	data, err := json.Marshal(struct {
		Event    any  `json:"event"`
		Folded   int  `json:"folded"`
		Resolves bool `json:"resolves"`
	}{m.Event, m.Folded, m.Resolves})
	if err != nil {
		return "", fmt.Errorf("encoding the event: %w", err)
	}
	sum := sha256.Sum256(data)
	return "windlass-" + hex.EncodeToString(sum[:16]), nil
}

// Webex (developer.webex.com, Messages, "Create a Message"): POST
// {"roomId", "text", "markdown"} to https://webexapis.com/v1/messages with
// the bot's access token as "Authorization: Bearer"; "text" is the plain
// alternative of "markdown". Messages are at most 7439 bytes.

const (
	webexDefaultAddress = "https://webexapis.com/v1/messages"
	webexTextLimit      = 3500
)

func newWebex(cfg notify.Config) (requestFunc, error) {
	u, err := addressOr(cfg, webexDefaultAddress)
	if err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Token, "the token (the Secret's token key: the bot's access token)"); err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Channel, "the channel (spec.channel: the room id)"); err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		s := summarize(m)
		markdown := joinNonEmpty("\n\n", "**"+s.Title+"**", s.Text, s.details())
		body := map[string]string{
			"roomId":   cfg.Channel,
			"text":     truncate(s.plain(), webexTextLimit),
			"markdown": truncate(markdown, webexTextLimit),
		}
		return notify.Request{URL: u.String(), Body: body, Headers: bearer(cfg.Token)}, nil
	}, nil
}

// Telegram (core.telegram.org/bots/api, sendMessage): POST {"chat_id",
// "text", "parse_mode"} to https://api.telegram.org/bot<token>/sendMessage;
// the address, when set, replaces https://api.telegram.org. The text is
// HTML (parse_mode "HTML": <b> and the entities &lt; &gt; &amp; &quot; and
// numeric ones), at most 4096 characters.

const (
	telegramDefaultAddress = "https://api.telegram.org"
	telegramTextLimit      = 3500
)

func newTelegram(cfg notify.Config) (requestFunc, error) {
	u, err := addressOr(cfg, telegramDefaultAddress)
	if err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Token, "the token (the Secret's token key: the bot token from BotFather)"); err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Channel, "the channel (spec.channel: the chat id or @channel)"); err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		s := summarize(m)
		text := joinNonEmpty("\n", "<b>"+html.EscapeString(s.Title)+"</b>",
			html.EscapeString(truncate(s.Text, telegramTextLimit)), html.EscapeString(s.details()))
		body := map[string]string{"chat_id": cfg.Channel, "text": text, "parse_mode": "HTML"}
		return notify.Request{URL: join(u, "/bot"+cfg.Token+"/sendMessage"), Body: body}, nil
	}, nil
}

// Zulip (zulip.com/api/send-message): POST /api/v1/messages, a form with
// type=stream, to=<stream>, topic=<topic> (at most 60 characters) and
// content (Zulip markdown, at most 10000 bytes), with basic auth: the
// bot's email and its API key. The email is the Secret's username (else
// spec.username), the key its password (else its token); the topic is
// the object.

const (
	zulipTopicLimit = 60
	zulipTextLimit  = 9000
)

func newZulip(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the organization URL, e.g. https://example.zulipchat.com")
	if err != nil {
		return nil, err
	}
	email, key := firstNonEmpty(cfg.BasicUsername, cfg.Username), firstNonEmpty(cfg.Password, cfg.Token)
	if err := require(cfg, cfg.Channel, "the channel (spec.channel: the stream)"); err != nil {
		return nil, err
	}
	if err := require(cfg, email, "the username (the Secret's username key: the bot's email)"); err != nil {
		return nil, err
	}
	if err := require(cfg, key, "the password (the Secret's password key: the bot's API key)"); err != nil {
		return nil, err
	}
	headers := map[string]string{"Authorization": basicAuth(email, key)}
	return func(m notify.Message) (notify.Request, error) {
		s := summarize(m)
		form := url.Values{
			"type":    {"stream"},
			"to":      {cfg.Channel},
			"topic":   {truncate(s.Title, zulipTopicLimit)},
			"content": {truncate(joinNonEmpty("\n\n", s.Text, s.details()), zulipTextLimit)},
		}
		return notify.Request{URL: join(u, "/api/v1/messages"), Body: []byte(form.Encode()),
			ContentType: "application/x-www-form-urlencoded", Headers: headers}, nil
	}, nil
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
