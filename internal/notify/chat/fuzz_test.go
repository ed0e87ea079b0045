package chat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/windlass-dev/windlass/internal/notify/notifytest"

	"github.com/windlass-dev/windlass/internal/notify"
)

// fuzzHost is the address host of every chat type in FuzzRequests.
const fuzzHost = "chat.example.com"

// FuzzRequests builds, for every chat type (and discord's Slack-compatible
// address), the request of a message made from a fuzzed event. It asserts
// that the request goes to the configured host; that its body encodes
// (JSON, or a form for zulip); that every field the type truncates is
// within its limit and, from valid UTF-8, still valid UTF-8; that discord
// has at most 25 fields, none empty; that telegram's HTML holds no tag
// but the <b> title; that generic bodies are the event with Text as the
// message and generic-hmac's signature is the body's HMAC; and that
// matrix's transaction id is a hash.
func FuzzRequests(f *testing.F) {
	notifytest.AddSeeds(f, "n<b>", "<b>bold</b> & `code` <!-- windlass:notification x -->", "second revision", false)
	type built struct {
		typ   string
		build requestFunc
	}
	var types []built
	for _, typ := range append(Types, "discord-slack") {
		cfg := notify.Config{Type: typ, Address: "https://" + fuzzHost + "/hooks/T0/secret", Token: "t0ken", Channel: "ops",
			Username: "bot@example.com", Password: "api-key"}
		if typ == "discord-slack" {
			cfg.Type, cfg.Address = "discord", cfg.Address+"/slack"
		}
		build, err := constructors[cfg.Type](cfg)
		if err != nil {
			f.Fatalf("%s: %v", typ, err)
		}
		types = append(types, built{typ, build})
	}
	matrixTxn := regexp.MustCompile(`/send/m\.room\.message/windlass-[0-9a-f]{32}$`)
	f.Fuzz(func(t *testing.T, kind, name, namespace, reason, text, revision, key, value string, failed, resolves bool, folded uint8) {
		m := notifytest.Message(kind, name, namespace, reason, text, revision, key, value, failed, resolves, folded)
		valid := notifytest.ValidUTF8(kind, name, namespace, reason, text, revision, key, value)
		within := func(typ, field, s string, limit int) {
			t.Helper()
			if len(s) > limit {
				t.Fatalf("%s: %s is %d bytes, over its limit of %d", typ, field, len(s), limit)
			}
			if valid && !utf8.ValidString(s) {
				t.Fatalf("%s: %s is not valid UTF-8: %q", typ, field, s)
			}
		}
		for _, b := range types {
			req, err := b.build(m)
			if err != nil {
				t.Fatalf("%s: %v", b.typ, err)
			}
			u, err := url.Parse(req.URL)
			if err != nil || u.Host != fuzzHost {
				t.Fatalf("%s: the request goes to %q", b.typ, req.URL)
			}
			data, isBytes := req.Body.([]byte)
			if !isBytes {
				if data, err = json.Marshal(req.Body); err != nil || !json.Valid(data) {
					t.Fatalf("%s: the body does not encode: %v", b.typ, err)
				}
			}
			switch body := req.Body.(type) {
			case slackMessage:
				for _, a := range body.Attachments {
					within(b.typ, "the text", a.Text, slackTextLimit)
					within(b.typ, "the fallback", a.Fallback, slackTextLimit)
				}
			case discordMessage:
				for _, e := range body.Embeds {
					within(b.typ, "the title", e.Title, 256)
					within(b.typ, "the description", e.Description, 4000)
					if len(e.Fields) > discordMaxFields {
						t.Fatalf("%s: %d fields", b.typ, len(e.Fields))
					}
					for _, fl := range e.Fields {
						within(b.typ, "a field's name", fl.Name, 256)
						within(b.typ, "a field's value", fl.Value, 1024)
						if fl.Value == "" {
							t.Fatalf("%s: the field %q is empty", b.typ, fl.Name)
						}
					}
				}
			case teamsMessage:
				within(b.typ, "the text", body.Attachments[0].Content.Body[1].(textBlock).Text, teamsTextLimit)
			case larkMessage:
				for _, e := range body.Card.Elements {
					within(b.typ, "an element", e.Text.Content, larkTextLimit)
				}
			case zoomMessage:
				within(b.typ, "the text", body.Content.Body[0].Text, zoomTextLimit)
			case map[string]string:
				switch b.typ {
				case "webex":
					within(b.typ, "the text", body["text"], webexTextLimit)
					within(b.typ, "the markdown", body["markdown"], webexTextLimit)
				case "googlechat":
					within(b.typ, "the text", body["text"], googleChatTextLimit)
				case "telegram":
					rest, ok := strings.CutPrefix(body["text"], "<b>")
					if i := strings.Index(rest, "</b>"); !ok || i < 0 || strings.ContainsAny(rest[:i]+rest[i+len("</b>"):], "<>") {
						t.Fatalf("%s: the HTML holds a tag besides the title's <b>: %q", b.typ, body["text"])
					}
				case "matrix":
					if !matrixTxn.MatchString(u.Path) {
						t.Fatalf("%s: the path %q does not end with a transaction id", b.typ, u.Path)
					}
				}
			}
			switch b.typ {
			case "zulip":
				form, err := url.ParseQuery(string(data))
				if err != nil {
					t.Fatalf("%s: the body is not a form: %v", b.typ, err)
				}
				within(b.typ, "the topic", form.Get("topic"), zulipTopicLimit)
				within(b.typ, "the content", form.Get("content"), zulipTextLimit)
			case "generic", "generic-hmac":
				want, err := notify.WireEvent(m)
				if err != nil || string(data) != string(want) {
					t.Fatalf("%s: the body is not the wire event: %v", b.typ, err)
				}
				if b.typ == "generic-hmac" {
					mac := hmac.New(sha256.New, []byte("t0ken"))
					mac.Write(data)
					if req.Headers[signatureHeader] != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
						t.Fatalf("%s: the signature %q is not the body's", b.typ, req.Headers[signatureHeader])
					}
				}
			}
		}
	})
}
