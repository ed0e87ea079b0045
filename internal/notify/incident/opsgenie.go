package incident

import (
	"net/url"
	"strings"

	"github.com/windlass-dev/windlass/internal/notify"
)

// Opsgenie Alert API (docs.opsgenie.com/docs/alert-api): POST /v2/alerts
// with "Authorization: GenieKey <key>" creates an alert: message (at most
// 130 characters), alias (at most 512; "there can be only one alert with
// open status with the same alias", and later actions can name the alert
// by it), description (at most 15000), details (a string map), entity,
// source, tags, priority (P1..P5, P3 by default). POST
// /v2/alerts/<alias>/close?identifierType=alias closes it, with an
// optional source and note (at most 25000 characters). Requests are answered 202 and processed
// asynchronously.
//
// The address is the alerts URL (https://api.opsgenie.com/v2/alerts, the
// default; https://api.eu.opsgenie.com/v2/alerts in the EU); the Secret's
// token is the API integration key.
//
// A failure creates an alert whose alias is the object
// ("kustomization:apps.flux-system", ':' rather than '/' so that the alias
// is one path segment of the close URL); repeated failures are counted on
// it, and the recovery closes it with the recovery text as note. Info
// events create P5 alerts without that alias: they neither merge into an
// open failure alert (which would keep the info text) nor get closed with
// it.

// opsgenieAlerts is the default address.
const opsgenieAlerts = "https://api.opsgenie.com/v2/alerts"

// ogAlert is a create-alert request.
type ogAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias,omitempty"`
	Description string            `json:"description"`
	Details     map[string]string `json:"details"`
	Entity      string            `json:"entity"`
	Source      string            `json:"source,omitempty"`
	Tags        []string          `json:"tags"`
	Priority    string            `json:"priority,omitempty"`
}

// ogClose is a close-alert request.
type ogClose struct {
	Source string `json:"source,omitempty"`
	Note   string `json:"note"`
}

func newOpsgenie(cfg notify.Config) (*target, error) {
	u, err := address(cfg, opsgenieAlerts)
	if err != nil {
		return nil, err
	}
	if err := requireToken(cfg, "the Opsgenie API integration key"); err != nil {
		return nil, err
	}
	alerts := strings.TrimRight(withPath(u, ""), "/")
	headers := map[string]string{"Authorization": "GenieKey " + cfg.Token}
	return &target{secrets: []string{cfg.Token}, request: func(m notify.Message) (notify.Request, error) {
		alias := boundedKey(strings.Replace(notify.ObjectID(m), "/", ":", 1), 512)
		if m.Resolves {
			return notify.Request{URL: alerts + "/" + url.PathEscape(alias) + "/close?identifierType=alias", Headers: headers,
				Body: ogClose{Source: m.ReportingController, Note: truncate(notify.Text(m), 25000)}}, nil
		}
		body := ogAlert{
			Message:     truncate(objectName(m)+": "+firstLine(notify.Text(m)), 130),
			Alias:       alias,
			Description: truncate(notify.Text(m), 15000),
			Details:     details(m),
			Entity:      notify.ObjectID(m),
			Source:      m.ReportingController,
			Tags:        []string{"flux", severity(m)},
		}
		if !notify.IsError(m) {
			body.Alias, body.Priority = "", "P5"
		}
		return notify.Request{URL: alerts, Headers: headers, Body: body}, nil
	}}, nil
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
