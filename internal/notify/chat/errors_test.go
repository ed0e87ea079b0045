package chat

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/notify"
)

// fullConfig is a valid Config of typ, whose address is address.
func fullConfig(typ, address string) notify.Config {
	return notify.Config{AllowLoopback: true, Type: typ, Address: address, Channel: "!room:example.org", Token: secretToken,
		BasicUsername: "bot@example.com", Password: secretToken}
}

// TestNewRefuses: a missing address, token, channel or credential is an
// error saying what is missing; so are an unknown type and a link-local
// address, for every type.
func TestNewRefuses(t *testing.T) {
	const hook = "https://chat.example.com/hook"
	type refusal struct {
		name    string
		cfg     notify.Config
		wantErr string
	}
	tests := []refusal{
		{name: "unknown type", cfg: notify.Config{AllowLoopback: true, Type: "carrier-pigeon", Address: hook}, wantErr: `unknown provider type "carrier-pigeon"`},
		{name: "generic-hmac without token", cfg: notify.Config{AllowLoopback: true, Type: "generic-hmac", Address: hook}, wantErr: "generic-hmac provider: the token"},
		{name: "slack API without token", cfg: notify.Config{AllowLoopback: true, Type: "slack", Address: "https://slack.com/api/chat.postMessage", Channel: "#a"}, wantErr: "slack provider: the token"},
		{name: "slack API without channel", cfg: notify.Config{AllowLoopback: true, Type: "slack", Address: "https://slack.com/api/chat.postMessage", Token: "tok-123"}, wantErr: "slack provider: the channel"},
		{name: "matrix without token", cfg: notify.Config{AllowLoopback: true, Type: "matrix", Address: "https://matrix.org", Channel: "!r:m"}, wantErr: "matrix provider: the token"},
		{name: "matrix without room", cfg: notify.Config{AllowLoopback: true, Type: "matrix", Address: "https://matrix.org", Token: "tok-123"}, wantErr: "matrix provider: the channel (spec.channel: the room id"},
		{name: "webex without token", cfg: notify.Config{AllowLoopback: true, Type: "webex", Channel: "r"}, wantErr: "webex provider: the token"},
		{name: "webex without room", cfg: notify.Config{AllowLoopback: true, Type: "webex", Token: "tok-123"}, wantErr: "webex provider: the channel (spec.channel: the room id)"},
		{name: "telegram without token", cfg: notify.Config{AllowLoopback: true, Type: "telegram", Channel: "-1"}, wantErr: "telegram provider: the token"},
		{name: "telegram without chat", cfg: notify.Config{AllowLoopback: true, Type: "telegram", Token: "tok-123"}, wantErr: "telegram provider: the channel (spec.channel: the chat id"},
		{name: "zulip without stream", cfg: notify.Config{AllowLoopback: true, Type: "zulip", Address: hook, BasicUsername: "b@x", Password: "key-123"}, wantErr: "zulip provider: the channel"},
		{name: "zulip without email", cfg: notify.Config{AllowLoopback: true, Type: "zulip", Address: hook, Channel: "s", Password: "key-123"}, wantErr: "zulip provider: the username"},
		{name: "zulip without key", cfg: notify.Config{AllowLoopback: true, Type: "zulip", Address: hook, Channel: "s", BasicUsername: "b@x"}, wantErr: "zulip provider: the password"},
	}
	for _, typ := range Types {
		if typ != "webex" && typ != "telegram" {
			tests = append(tests, refusal{name: typ + " without address", cfg: fullConfig(typ, ""), wantErr: typ + " provider: the address"})
		}
		tests = append(tests, refusal{name: typ + " link-local", cfg: fullConfig(typ, "http://169.254.169.254/"), wantErr: "link-local"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(tt.cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
	// webex and telegram have a default address.
	for _, typ := range []string{"webex", "telegram"} {
		_, err := New(fullConfig(typ, ""))
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), typ)
	}
}

// TestErrorsHideSecrets: whatever fails (New on a bad address, a 500
// answer that echoes the path and the Authorization header, a service
// that is down), no error holds the token, the password or the secret
// path of a webhook URL; a 500 stays a retryable notify.StatusError.
func TestErrorsHideSecrets(t *testing.T) {
	m := testMessages()["error"]
	secrets := []string{secretToken, "XXXX", "hooktoken", "paths/invoke", "hook/xyz", "hooks/abc",
		base64.StdEncoding.EncodeToString([]byte("bot@example.com:" + secretToken))}
	noSecret := func(g Gomega, err error) {
		g.Expect(err).To(HaveOccurred())
		for _, s := range secrets {
			g.Expect(err.Error()).NotTo(ContainSubstring(s))
		}
	}
	for _, tc := range chatCases() {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := newRecorder(t, http.StatusInternalServerError)
			cfg := tc.cfg(rec.srv.URL)
			cfg.TLS = rec.tls()

			bad := cfg
			bad.Address = "ftp://" + secretToken + "@" + strings.TrimPrefix(cfg.Address, "https://") + "/" + secretToken
			_, err := New(bad)
			noSecret(g, err)

			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			err = n.Post(context.Background(), m)
			noSecret(g, err)
			var se *notify.StatusError
			g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
			g.Expect(se.Code).To(Equal(http.StatusInternalServerError))
			g.Expect(se.Retryable()).To(BeTrue())
			g.Expect(se.Answer).To(ContainSubstring("no such hook"), "the answer is quoted, without its secrets")

			rec.srv.Close()
			noSecret(g, n.Post(context.Background(), m))
		})
	}
}

// TestLinkLocalErrorIs: the error of a link-local address, scrubbed of
// the token its path holds, still matches notify.ErrLinkLocal.
func TestLinkLocalErrorIs(t *testing.T) {
	g := NewWithT(t)
	_, err := New(notify.Config{AllowLoopback: true, Type: "generic", Address: "http://169.254.169.254/hooks/" + secretToken})
	g.Expect(errors.Is(err, notify.ErrLinkLocal)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("169.254.169.254"))
	g.Expect(err.Error()).NotTo(ContainSubstring(secretToken))
}

// TestGenericAuthorization: basic auth from the Secret, and an
// Authorization header from the Secret's headers wins over the token.
func TestGenericAuthorization(t *testing.T) {
	tests := []struct {
		name    string
		cfg     notify.Config
		want    string
		headers map[string]string
	}{
		{name: "basic auth", cfg: notify.Config{AllowLoopback: true, BasicUsername: "user", Password: "pw"}, want: "Basic dXNlcjpwdw=="},
		{name: "header wins", cfg: notify.Config{AllowLoopback: true, Token: secretToken, Headers: map[string]string{"authorization": "Token abc", "X-Team": "web"}},
			want: "Token abc", headers: map[string]string{"X-Team": "web"}},
		{name: "none", cfg: notify.Config{AllowLoopback: true}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := newRecorder(t, http.StatusNoContent)
			cfg := tt.cfg
			cfg.Type, cfg.Address, cfg.TLS = "generic", rec.srv.URL, rec.tls()
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.Post(context.Background(), testMessages()["error"])).To(Succeed())
			r := rec.last()
			g.Expect(r.Header.Get("Authorization")).To(Equal(tt.want))
			for k, v := range tt.headers {
				g.Expect(r.Header.Get(k)).To(Equal(v))
			}
		})
	}
}

// TestMatrixTransactionID: posting the same message again reuses its
// transaction id (the homeserver drops the repeat); another message gets
// another id.
func TestMatrixTransactionID(t *testing.T) {
	g := NewWithT(t)
	rec := newRecorder(t, http.StatusOK)
	cfg := fullConfig("matrix", rec.srv.URL)
	cfg.TLS = rec.tls()
	n, err := New(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	msgs := testMessages()
	var paths []string
	for _, m := range []notify.Message{msgs["error"], msgs["error"], msgs["folded"], msgs["resolved"]} {
		g.Expect(n.Post(context.Background(), m)).To(Succeed())
		paths = append(paths, rec.last().Path)
	}
	g.Expect(paths[1]).To(Equal(paths[0]))
	g.Expect(paths[2]).NotTo(Equal(paths[0]))
	g.Expect(paths[3]).NotTo(Equal(paths[0]))
	g.Expect(paths[3]).NotTo(Equal(paths[2]))
}

// TestDiscordSlackEndpoint: an address on Discord's Slack-compatible
// endpoint gets Slack's format.
func TestDiscordSlackEndpoint(t *testing.T) {
	g := NewWithT(t)
	rec := newRecorder(t, http.StatusOK)
	n, err := New(notify.Config{AllowLoopback: true, Type: "discord", Address: rec.srv.URL + "/api/webhooks/1/t/slack", TLS: rec.tls()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testMessages()["error"])).To(Succeed())
	body := decode(g, rec.last().Body)
	g.Expect(body).NotTo(HaveKey("embeds"))
	g.Expect(str(g, items(g, body, "attachments")[0], "color")).To(Equal("danger"))
}

func TestTruncate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(truncate("short", 10)).To(Equal("short"))
	g.Expect(truncate("héllo wörld", 8)).To(Equal("héll…"))
	g.Expect(len(truncate(strings.Repeat("é", 100), 51))).To(BeNumerically("<=", 51))
}
