package incident

import (
	"github.com/windlass-dev/windlass/internal/notify"
)

// incident.io Alert Events V2 (api-docs.incident.io, "CreateHTTP Alert
// Events V2"): POST /v2/alert_events/http/<alert source config id> with
// "Authorization: Bearer <token>" and {title, description (markdown),
// deduplication_key, status ("firing" or "resolved"), metadata (what the
// alert source is set up to parse), source_url}; answered 202. Events with
// the same deduplication_key are one alert: a "resolved" one resolves it.
//
// The address is the HTTP alert source's URL, as incident.io shows it
// when the source is created; the Secret's token is the source's token.
//
// A failure fires the alert of the object (deduplication_key
// "kustomization/apps.flux-system"), the recovery resolves it. Info
// events fire alerts of their own (the object, reason and revision as
// key): they neither merge into an open failure, whose text they would
// replace, nor resolve it; their metadata says severity "info", on which
// the source's routes can filter.

// ioAlertEvent is the body of an alert event.
type ioAlertEvent struct {
	Title            string            `json:"title"`
	Description      string            `json:"description"`
	DeduplicationKey string            `json:"deduplication_key"`
	Status           string            `json:"status"`
	Metadata         map[string]string `json:"metadata"`
}

// ioKeyLimit bounds the deduplication key, for which the API documents no
// limit: long enough for any object, short enough for any store.
const ioKeyLimit = 255

func newIncidentIO(cfg notify.Config) (*target, error) {
	if _, err := address(cfg, ""); err != nil {
		return nil, err
	}
	if err := requireToken(cfg, "the alert source's token"); err != nil {
		return nil, err
	}
	headers := map[string]string{"Authorization": "Bearer " + cfg.Token}
	return &target{secrets: []string{cfg.Token}, request: func(m notify.Message) (notify.Request, error) {
		body := ioAlertEvent{
			Title:            truncate(objectName(m)+": "+firstLine(notify.Text(m)), 255),
			Description:      truncate(notify.Text(m), 15000),
			DeduplicationKey: boundedKey(notify.ObjectID(m), ioKeyLimit),
			Status:           "firing",
			Metadata:         ioMetadata(m),
		}
		switch {
		case m.Resolves:
			body.Status = "resolved"
		case !notify.IsError(m):
			body.DeduplicationKey = boundedKey(notify.ObjectID(m)+":"+m.Reason+":"+revision(m), ioKeyLimit)
		}
		return notify.Request{URL: cfg.Address, Headers: headers, Body: body}, nil
	}}, nil
}

// ioMetadata is details with the object and the severity, which alert
// sources route on.
func ioMetadata(m notify.Message) map[string]string {
	d := details(m)
	o := m.InvolvedObject
	d["kind"], d["name"], d["namespace"], d["severity"] = o.Kind, o.Name, o.Namespace, severity(m)
	if m.ReportingController != "" {
		d["controller"] = m.ReportingController
	}
	return d
}
