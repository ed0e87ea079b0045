package chat

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

const (
	secretToken = "s3cr3t-token"
	revision    = "main@sha1:731f7eaddfb6af01cb2173e18f0f75b0ba780ef1"
	objectID    = "kustomization/webapp.apps"
	// dedupToken is the event's token metadata, which chat types hide.
	dedupToken = "dedup-7f3a"
)

// recorded is one request the test server got.
type recorded struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

// recorder is a loopback HTTPS server that records requests and answers
// status, echoing the request's path and Authorization when it fails (so
// that errors are shown to hold no secret even when the service echoes
// them).
type recorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	status int
}

func newRecorder(t *testing.T, status int) *recorder {
	rec := &recorder{status: status}
	rec.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		rec.mu.Unlock()
		w.WriteHeader(rec.status)
		if rec.status >= 300 {
			_, _ = fmt.Fprintf(w, "no such hook %s (auth %q)", r.URL.Path, r.Header.Get("Authorization"))
		}
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// tls is the client TLS that trusts the server.
func (rec *recorder) tls() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(rec.srv.Certificate())
	return &tls.Config{RootCAs: pool}
}

func (rec *recorder) last() recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.reqs[len(rec.reqs)-1]
}

func baseEvent() eventv1.Event {
	return eventv1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: "apps", Name: "webapp"},
		Severity:       eventv1.SeverityError,
		Timestamp:      metav1.NewTime(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)),
		Message:        "health check failed for deployment/web",
		Reason:         "HealthCheckFailed",
		Metadata: map[string]string{
			"kustomize.toolkit.fluxcd.io/revision": revision,
			"env":                                  "prod",
			eventv1.MetaToken:                      dedupToken,
		},
		ReportingController: "kustomize-controller",
	}
}

// testMessages are an error, a resolved failure and a folded error.
func testMessages() map[string]notify.Message {
	resolved := baseEvent()
	resolved.Severity = eventv1.SeverityInfo
	return map[string]notify.Message{
		"error":    {Event: baseEvent()},
		"resolved": {Event: resolved, Resolves: true},
		"folded":   {Event: baseEvent(), Folded: 3},
	}
}

// chatCase says how one type is configured against the test server and
// what its requests must look like.
type chatCase struct {
	name        string
	cfg         func(base string) notify.Config
	method      string
	path        string // a prefix for matrix, whose path ends with a transaction id
	contentType string
	auth        func(g Gomega, r recorded)
	// shape asserts the documented payload and returns what people see
	// and the color or style of the message ("" where there is none).
	shape func(g Gomega, r recorded) (visible, style string)
	// styles are the style of a failure and of anything else.
	styles [2]string
}

func chatCases() []chatCase {
	const jsonType = "application/json"
	return []chatCase{
		{name: "generic", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "generic", Address: b + "/hook", Token: secretToken}
		}, method: http.MethodPost, path: "/hook", contentType: jsonType,
			auth: func(g Gomega, r recorded) {
				g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + secretToken))
				g.Expect(r.Header.Get("Gotk-Component")).To(Equal("kustomize-controller"))
			}, shape: genericShape},
		{name: "generic-hmac", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "generic-hmac", Address: b + "/hook", Token: secretToken}
		}, method: http.MethodPost, path: "/hook", contentType: jsonType,
			auth: func(g Gomega, r recorded) {
				mac := hmac.New(sha256.New, []byte(secretToken))
				mac.Write(r.Body)
				g.Expect(r.Header.Get("X-Signature")).To(Equal("sha256=" + hex.EncodeToString(mac.Sum(nil))))
				g.Expect(r.Header.Get("Authorization")).To(BeEmpty(), "the HMAC key is never sent")
			}, shape: genericShape},
		{name: "slack", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "slack", Address: b + "/services/T0/B0/XXXX", Channel: "#alerts", Username: "windlass", Token: secretToken}
		}, method: http.MethodPost, path: "/services/T0/B0/XXXX", contentType: jsonType,
			auth:  func(g Gomega, r recorded) { g.Expect(r.Header.Get("Authorization")).To(BeEmpty()) },
			shape: slackShape("windlass"), styles: [2]string{"danger", "good"}},
		{name: "slack chat.postMessage", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "slack", Address: b + "/api/chat.postMessage", Channel: "#alerts", Token: secretToken}
		}, method: http.MethodPost, path: "/api/chat.postMessage", contentType: jsonType,
			auth:  bearerAuth,
			shape: slackShape("kustomize-controller"), styles: [2]string{"danger", "good"}},
		{name: "msteams", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "msteams", Address: b + "/workflows/w1/triggers/manual/paths/invoke?sig=abc"}
		}, method: http.MethodPost, path: "/workflows/w1/triggers/manual/paths/invoke", contentType: jsonType,
			auth: noAuth, shape: teamsShape, styles: [2]string{"Attention", "Good"}},
		{name: "discord", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "discord", Address: b + "/api/webhooks/123/hooktoken", Username: "windlass"}
		}, method: http.MethodPost, path: "/api/webhooks/123/hooktoken", contentType: jsonType,
			auth: noAuth, shape: discordShape, styles: [2]string{fmt.Sprint(0xe01e5a), fmt.Sprint(0x2eb67d)}},
		{name: "googlechat", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "googlechat", Address: b + "/v1/spaces/AAA/messages?key=k1&token=t1"}
		}, method: http.MethodPost, path: "/v1/spaces/AAA/messages", contentType: jsonType,
			auth: noAuth, shape: googleChatShape},
		{name: "rocket", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "rocket", Address: b + "/hooks/abc/def", Channel: "#deploys"}
		}, method: http.MethodPost, path: "/hooks/abc/def", contentType: jsonType,
			auth: noAuth, shape: rocketShape, styles: [2]string{"#e01e5a", "#2eb67d"}},
		{name: "matrix", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "matrix", Address: b, Channel: "!room:example.org", Token: secretToken}
		}, method: http.MethodPut, path: "/_matrix/client/v3/rooms/!room:example.org/send/m.room.message/", contentType: jsonType,
			auth: bearerAuth, shape: matrixShape},
		{name: "webex", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "webex", Address: b + "/v1/messages", Channel: "room-1", Token: secretToken}
		}, method: http.MethodPost, path: "/v1/messages", contentType: jsonType,
			auth: bearerAuth, shape: webexShape},
		{name: "telegram", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "telegram", Address: b, Channel: "-100123", Token: secretToken}
		}, method: http.MethodPost, path: "/bot" + secretToken + "/sendMessage", contentType: jsonType,
			auth: noAuth, shape: telegramShape},
		{name: "lark", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "lark", Address: b + "/open-apis/bot/v2/hook/xyz"}
		}, method: http.MethodPost, path: "/open-apis/bot/v2/hook/xyz", contentType: jsonType,
			auth: noAuth, shape: larkShape, styles: [2]string{"red", "green"}},
		{name: "zoom", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "zoom", Address: b + "/chat/webhooks/incomingwebhook/hook-id", Token: secretToken}
		}, method: http.MethodPost, path: "/chat/webhooks/incomingwebhook/hook-id", contentType: jsonType,
			auth: func(g Gomega, r recorded) {
				g.Expect(r.Header.Get("Authorization")).To(Equal(secretToken), "the verification token, as is")
				g.Expect(r.RawQuery).To(Equal("format=full"))
			}, shape: zoomShape, styles: [2]string{"error", "info"}},
		{name: "zulip", cfg: func(b string) notify.Config {
			return notify.Config{AllowLoopback: true, Type: "zulip", Address: b, Channel: "deploys", BasicUsername: "bot@example.com", Password: secretToken}
		}, method: http.MethodPost, path: "/api/v1/messages", contentType: "application/x-www-form-urlencoded",
			auth: func(g Gomega, r recorded) {
				req := &http.Request{Header: r.Header}
				user, password, ok := req.BasicAuth()
				g.Expect(ok).To(BeTrue())
				g.Expect(user).To(Equal("bot@example.com"))
				g.Expect(password).To(Equal(secretToken))
			}, shape: zulipShape},
	}
}

// TestPost posts an error, a resolved and a folded message with every type
// to a loopback HTTPS server and checks each request against the
// service's documented format.
func TestPost(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range chatCases() {
		rec := newRecorder(t, http.StatusOK)
		cfg := tc.cfg(rec.srv.URL)
		cfg.TLS = rec.tls()
		covered[cfg.Type] = true
		n, err := New(cfg)
		if err != nil {
			t.Fatalf("%s: New: %v", tc.name, err)
		}
		for kind, m := range testMessages() {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(n.Post(context.Background(), m)).To(Succeed())
				r := rec.last()
				g.Expect(r.Method).To(Equal(tc.method))
				g.Expect(r.Path).To(HavePrefix(tc.path))
				if tc.method != http.MethodPut {
					g.Expect(r.Path).To(Equal(tc.path))
				}
				g.Expect(r.Header.Get("Content-Type")).To(Equal(tc.contentType))
				tc.auth(g, r)
				visible, style := tc.shape(g, r)
				g.Expect(visible).To(ContainSubstring(notify.Text(m)))
				g.Expect(visible).To(ContainSubstring(revision))
				g.Expect(visible).To(ContainSubstring(objectID))
				if !strings.HasPrefix(tc.name, "generic") {
					g.Expect(visible).To(ContainSubstring("prod"), "metadata is shown")
					g.Expect(visible).NotTo(ContainSubstring(dedupToken), "machinery metadata is hidden")
				}
				want := tc.styles[1]
				if notify.IsError(m) {
					want = tc.styles[0]
				}
				g.Expect(style).To(Equal(want))
			})
		}
	}
	for _, typ := range Types {
		if !covered[typ] {
			t.Errorf("type %s has no case", typ)
		}
	}
	if len(constructors) != len(Types) {
		t.Errorf("Types lists %d types, constructors %d", len(Types), len(constructors))
	}
}

func noAuth(g Gomega, r recorded) { g.Expect(r.Header.Get("Authorization")).To(BeEmpty()) }

func bearerAuth(g Gomega, r recorded) {
	g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer " + secretToken))
}

// decode decodes a JSON body into a map.
func decode(g Gomega, body []byte) map[string]any {
	var m map[string]any
	g.Expect(json.Unmarshal(body, &m)).To(Succeed(), string(body))
	return m
}

func object(g Gomega, m map[string]any, key string) map[string]any {
	g.Expect(m).To(HaveKey(key))
	o, ok := m[key].(map[string]any)
	g.Expect(ok).To(BeTrue(), "%s is an object: %v", key, m[key])
	return o
}

// items returns the objects of the array m[key].
func items(g Gomega, m map[string]any, key string) []map[string]any {
	g.Expect(m).To(HaveKey(key))
	list, ok := m[key].([]any)
	g.Expect(ok).To(BeTrue(), "%s is an array: %v", key, m[key])
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		o, ok := item.(map[string]any)
		g.Expect(ok).To(BeTrue(), "%s holds objects: %v", key, item)
		out = append(out, o)
	}
	return out
}

func str(g Gomega, m map[string]any, key string) string {
	g.Expect(m).To(HaveKey(key))
	s, ok := m[key].(string)
	g.Expect(ok).To(BeTrue(), "%s is a string: %v", key, m[key])
	return s
}

func genericShape(g Gomega, r recorded) (string, string) {
	body := decode(g, r.Body)
	for _, key := range []string{"involvedObject", "severity", "timestamp", "message", "reason", "metadata", "reportingController"} {
		g.Expect(body).To(HaveKey(key))
	}
	var e eventv1.Event
	g.Expect(json.Unmarshal(r.Body, &e)).To(Succeed())
	g.Expect(e.Reason).To(Equal("HealthCheckFailed"))
	g.Expect(e.Timestamp.Time.Equal(baseEvent().Timestamp.Time)).To(BeTrue())
	rev, _ := e.Revision()
	return strings.Join([]string{e.Message, rev, notify.ObjectID(notify.Message{Event: e})}, "\n"), ""
}

func slackShape(username string) func(g Gomega, r recorded) (string, string) {
	return func(g Gomega, r recorded) (string, string) {
		body := decode(g, r.Body)
		g.Expect(str(g, body, "channel")).To(Equal("#alerts"))
		g.Expect(str(g, body, "username")).To(Equal(username))
		attachments := items(g, body, "attachments")
		g.Expect(attachments).To(HaveLen(1))
		a := attachments[0]
		g.Expect(str(g, a, "fallback")).To(ContainSubstring(objectID))
		visible := []string{str(g, a, "title"), str(g, a, "text")}
		visible = append(visible, fieldValues(g, items(g, a, "fields"), "title", "value", "short")...)
		return strings.Join(visible, "\n"), str(g, a, "color")
	}
}

// fieldValues asserts that every field has the keys and returns
// "name: value" of each.
func fieldValues(g Gomega, fields []map[string]any, name, value, flag string) []string {
	g.Expect(fields).NotTo(BeEmpty())
	var out []string
	for _, f := range fields {
		g.Expect(f).To(HaveKey(flag))
		out = append(out, str(g, f, name)+": "+str(g, f, value))
	}
	return out
}

func teamsShape(g Gomega, r recorded) (string, string) {
	body := decode(g, r.Body)
	g.Expect(str(g, body, "type")).To(Equal("message"))
	attachments := items(g, body, "attachments")
	g.Expect(attachments).To(HaveLen(1))
	g.Expect(str(g, attachments[0], "contentType")).To(Equal("application/vnd.microsoft.card.adaptive"))
	g.Expect(attachments[0]).To(HaveKeyWithValue("contentUrl", BeNil()))
	card := object(g, attachments[0], "content")
	g.Expect(str(g, card, "type")).To(Equal("AdaptiveCard"))
	g.Expect(str(g, card, "version")).To(Equal("1.4"))
	g.Expect(str(g, card, "$schema")).To(Equal("http://adaptivecards.io/schemas/adaptive-card.json"))
	elements := items(g, card, "body")
	g.Expect(elements).To(HaveLen(3))
	var visible []string
	for _, e := range elements[:2] {
		g.Expect(str(g, e, "type")).To(Equal("TextBlock"))
		visible = append(visible, str(g, e, "text"))
	}
	g.Expect(str(g, elements[2], "type")).To(Equal("FactSet"))
	visible = append(visible, fieldValues(g, items(g, elements[2], "facts"), "title", "value", "title")...)
	return strings.Join(visible, "\n"), str(g, elements[0], "color")
}

func discordShape(g Gomega, r recorded) (string, string) {
	body := decode(g, r.Body)
	g.Expect(str(g, body, "username")).To(Equal("windlass"))
	embeds := items(g, body, "embeds")
	g.Expect(embeds).To(HaveLen(1))
	e := embeds[0]
	color, ok := e["color"].(float64)
	g.Expect(ok).To(BeTrue(), "color is an integer")
	visible := append([]string{str(g, e, "title"), str(g, e, "description")}, fieldValues(g, items(g, e, "fields"), "name", "value", "inline")...)
	return strings.Join(visible, "\n"), fmt.Sprint(int(color))
}

func googleChatShape(g Gomega, r recorded) (string, string) {
	g.Expect(r.RawQuery).To(Equal("key=k1&token=t1"), "the webhook's key and token stay in the query")
	body := decode(g, r.Body)
	g.Expect(body).To(HaveLen(1))
	return str(g, body, "text"), ""
}

func rocketShape(g Gomega, r recorded) (string, string) {
	body := decode(g, r.Body)
	g.Expect(str(g, body, "channel")).To(Equal("#deploys"))
	g.Expect(str(g, body, "alias")).To(Equal("kustomize-controller"))
	attachments := items(g, body, "attachments")
	g.Expect(attachments).To(HaveLen(1))
	a := attachments[0]
	visible := append([]string{str(g, body, "text"), str(g, a, "text")}, fieldValues(g, items(g, a, "fields"), "title", "value", "short")...)
	return strings.Join(visible, "\n"), str(g, a, "color")
}

func matrixShape(g Gomega, r recorded) (string, string) {
	g.Expect(r.Path).To(MatchRegexp(`/send/m\.room\.message/windlass-[0-9a-f]{32}$`))
	body := decode(g, r.Body)
	g.Expect(str(g, body, "msgtype")).To(Equal("m.text"))
	return str(g, body, "body"), ""
}

func webexShape(g Gomega, r recorded) (string, string) {
	body := decode(g, r.Body)
	g.Expect(str(g, body, "roomId")).To(Equal("room-1"))
	g.Expect(str(g, body, "text")).To(ContainSubstring(revision))
	markdown := str(g, body, "markdown")
	g.Expect(markdown).To(HavePrefix("**" + objectID + "**"))
	return markdown, ""
}

func telegramShape(g Gomega, r recorded) (string, string) {
	body := decode(g, r.Body)
	g.Expect(str(g, body, "chat_id")).To(Equal("-100123"))
	g.Expect(str(g, body, "parse_mode")).To(Equal("HTML"))
	text := str(g, body, "text")
	g.Expect(text).To(HavePrefix("<b>" + objectID + "</b>"))
	return html.UnescapeString(text), ""
}

func larkShape(g Gomega, r recorded) (string, string) {
	body := decode(g, r.Body)
	g.Expect(str(g, body, "msg_type")).To(Equal("interactive"))
	card := object(g, body, "card")
	header := object(g, card, "header")
	title := object(g, header, "title")
	g.Expect(str(g, title, "tag")).To(Equal("plain_text"))
	visible := []string{str(g, title, "content")}
	for _, e := range items(g, card, "elements") {
		g.Expect(str(g, e, "tag")).To(Equal("div"))
		text := object(g, e, "text")
		g.Expect(str(g, text, "tag")).To(Equal("lark_md"))
		visible = append(visible, str(g, text, "content"))
	}
	return strings.Join(visible, "\n"), str(g, header, "template")
}

func zulipShape(g Gomega, r recorded) (string, string) {
	form, err := url.ParseQuery(string(r.Body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(form.Get("type")).To(Equal("stream"))
	g.Expect(form.Get("to")).To(Equal("deploys"))
	g.Expect(form.Get("topic")).To(Equal(objectID))
	g.Expect(form).To(HaveKey("content"))
	return form.Get("topic") + "\n" + form.Get("content"), ""
}
