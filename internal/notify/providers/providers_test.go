package providers

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/notify"
)

// TestNew: every type the issue names is served by one package, and an
// unknown type names the choices.
func TestNew(t *testing.T) {
	g := NewWithT(t)
	want := []string{"alertmanager", "azuredevops", "bitbucket", "bitbucketserver", "datadog", "discord", "generic", "generic-hmac",
		"gitea", "giteapullrequestcomment", "github", "githubdispatch", "githubpullrequestcomment", "gitlab",
		"gitlabmergerequestcomment", "googlechat", "grafana", "incident.io", "lark", "matrix", "msteams", "nats",
		"opsgenie", "otel", "pagerduty", "rocket", "sentry", "slack", "telegram", "webex", "zoom", "zulip"}
	g.Expect(Types()).To(Equal(want))
	n, err := New(notify.Config{Type: "generic", Address: "https://example.com/hook"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).NotTo(BeNil())
	_, err = New(notify.Config{Type: "github", Address: "https://github.com/org/repo", Token: "t"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(IsCommitStatus("github")).To(BeTrue())
	g.Expect(IsCommitStatus("slack")).To(BeFalse())
	g.Expect(NeedsToken("gitlab")).To(BeTrue())
	g.Expect(NeedsToken("giteapullrequestcomment")).To(BeTrue())
	g.Expect(NeedsToken("zoom")).To(BeFalse())
	g.Expect(AddressSchemes("nats")).To(Equal([]string{"nats", "tls"}))
	g.Expect(AddressSchemes("otel")).To(Equal([]string{"https", "http"}))
	_, err = New(notify.Config{Type: "carrier-pigeon"})
	g.Expect(err).To(MatchError(ContainSubstring(`provider type "carrier-pigeon" is not served by Windlass: choose one of alertmanager, azuredevops`)))
}

// TestNewTypes: each type added with the Provider types the schema
// accepts is built by the registry from the Config its README line
// documents.
func TestNewTypes(t *testing.T) {
	repo := "https://github.com/org/app"
	for _, cfg := range []notify.Config{
		{Type: "zoom", Address: "https://integrations.zoom.us/chat/webhooks/incomingwebhook/abc", Token: "t"},
		{Type: "incident.io", Address: "https://api.incident.io/v2/alert_events/http/01GW", Token: "t"},
		{Type: "otel", Address: "http://otel-collector:4318"},
		{Type: "nats", Address: "nats://nats:4222", Channel: "flux.events", BasicUsername: "u", Password: "p"},
		{Type: "githubpullrequestcomment", Address: repo, Token: "t"},
		{Type: "gitlabmergerequestcomment", Address: "https://gitlab.com/group/app", Token: "t"},
		{Type: "giteapullrequestcomment", Address: "https://gitea.example.com/org/app", Token: "t"},
	} {
		t.Run(cfg.Type, func(t *testing.T) {
			g := NewWithT(t)
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).NotTo(BeNil())
			g.Expect(Types()).To(ContainElement(cfg.Type))
		})
	}
}
