package chat

import (
	"strings"

	"github.com/windlass-dev/windlass/internal/notify"
)

// Slack (https://api.slack.com/reference/messaging/attachments, incoming
// webhooks and chat.postMessage): a message with one attachment whose
// color is "danger" or "good" (Slack's named colors; any hex also works),
// title, text and fields {title, value, short}; "fallback" is the
// plain-text summary for notifications. "channel" and "username" are
// chat.postMessage arguments that legacy webhooks also read.

// slackAPIPath is the path of Slack's Web API method chat.postMessage,
// which takes a bot token as "Authorization: Bearer" and needs a channel;
// incoming webhooks (hooks.slack.com) need neither.
const slackAPIPath = "/api/chat.postMessage"

// slackTextLimit keeps an attachment's text well under what Slack takes.
const slackTextLimit = 8000

type slackMessage struct {
	Channel     string            `json:"channel,omitempty"`
	Username    string            `json:"username,omitempty"`
	Text        string            `json:"text,omitempty"`
	Alias       string            `json:"alias,omitempty"`
	Attachments []slackAttachment `json:"attachments"`
}

type slackAttachment struct {
	Color    string       `json:"color"`
	Title    string       `json:"title,omitempty"`
	Text     string       `json:"text"`
	Fallback string       `json:"fallback,omitempty"`
	Fields   []slackField `json:"fields,omitempty"`
}

type slackField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

// newSlack posts to an incoming webhook, or to chat.postMessage with the
// token when the address is that method (on slack.com or any host).
func newSlack(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "an incoming webhook URL or https://slack.com/api/chat.postMessage")
	if err != nil {
		return nil, err
	}
	var headers map[string]string
	if strings.HasSuffix(u.Path, slackAPIPath) {
		if err := require(cfg, cfg.Token, "the token (the Secret's token key: a bot token for chat.postMessage)"); err != nil {
			return nil, err
		}
		if err := require(cfg, cfg.Channel, "the channel (spec.channel, for chat.postMessage)"); err != nil {
			return nil, err
		}
		headers = bearer(cfg.Token)
	}
	return func(m notify.Message) (notify.Request, error) {
		return notify.Request{URL: u.String(), Body: slackPayload(cfg, m), Headers: headers}, nil
	}, nil
}

// slackPayload is m in Slack's format; the username defaults to the
// reporting controller.
func slackPayload(cfg notify.Config, m notify.Message) slackMessage {
	s := summarize(m)
	color := "good"
	if s.Failed {
		color = "danger"
	}
	username := cfg.Username
	if username == "" {
		username = m.ReportingController
	}
	return slackMessage{
		Channel:  cfg.Channel,
		Username: username,
		Attachments: []slackAttachment{{
			Color: color, Title: s.Title, Text: truncate(s.Text, slackTextLimit),
			Fallback: truncate(s.Title+": "+s.Text, slackTextLimit), Fields: slackFields(s),
		}},
	}
}

func slackFields(s summary) []slackField {
	var fields []slackField
	for _, f := range s.facts() {
		fields = append(fields, slackField{Title: f[0], Value: f[1], Short: len(f[1]) < 40})
	}
	return fields
}

// Rocket.Chat incoming webhooks (docs.rocket.chat, Integrations) take a
// Rocket.Chat message: "text", "alias" (the name shown), "channel" (to
// override the integration's), and Slack-like "attachments" with color,
// text and fields {title, value, short}. The text names the object, the
// attachment says what happened. Colors are hex: Slack's names are
// Slack's.

const (
	rocketRed   = "#e01e5a"
	rocketGreen = "#2eb67d"
)

func newRocket(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the incoming webhook URL")
	if err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		s := summarize(m)
		color := rocketGreen
		if s.Failed {
			color = rocketRed
		}
		alias := cfg.Username
		if alias == "" {
			alias = m.ReportingController
		}
		body := slackMessage{
			Channel: cfg.Channel, Alias: alias, Text: s.Title,
			Attachments: []slackAttachment{{Color: color, Text: truncate(s.Text, slackTextLimit), Fields: slackFields(s)}},
		}
		return notify.Request{URL: u.String(), Body: body}, nil
	}, nil
}

// Discord (docs.discord.com, Webhook resource, Execute Webhook): the
// native payload, "username" and "embeds" of {title (256 characters),
// description (4096), color (an integer RGB), fields {name (256), value
// (1024, not empty), inline} (25 at most)}. The native format is chosen
// over Discord's Slack-compatible endpoint because it is the documented
// primary one and keeps colors and fields; an address that already ends
// with "/slack" (the Slack-compatible endpoint) gets Slack's format.

type discordMessage struct {
	Username string         `json:"username,omitempty"`
	Embeds   []discordEmbed `json:"embeds"`
}

type discordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Color       int            `json:"color"`
	Fields      []discordField `json:"fields,omitempty"`
}

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

const (
	discordRed   = 0xe01e5a
	discordGreen = 0x2eb67d
	// discordMaxFields is how many fields an embed may have.
	discordMaxFields = 25
)

func newDiscord(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the webhook URL")
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(u.Path, "/slack") {
		return func(m notify.Message) (notify.Request, error) {
			return notify.Request{URL: u.String(), Body: slackPayload(cfg, m)}, nil
		}, nil
	}
	return func(m notify.Message) (notify.Request, error) {
		return notify.Request{URL: u.String(), Body: discordPayload(cfg, m)}, nil
	}, nil
}

func discordPayload(cfg notify.Config, m notify.Message) discordMessage {
	s := summarize(m)
	embed := discordEmbed{Title: truncate(s.Title, 256), Description: truncate(s.Text, 4000), Color: discordGreen}
	if s.Failed {
		embed.Color = discordRed
	}
	for _, f := range s.facts() {
		if len(embed.Fields) == discordMaxFields {
			break
		}
		value := f[1]
		if value == "" {
			value = "-"
		}
		embed.Fields = append(embed.Fields, discordField{Name: truncate(f[0], 256), Value: truncate(value, 1024), Inline: len(value) < 40})
	}
	return discordMessage{Username: cfg.Username, Embeds: []discordEmbed{embed}}
}
