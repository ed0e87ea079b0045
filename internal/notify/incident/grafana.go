package incident

import (
	"github.com/windlass-dev/windlass/internal/notify"
)

// Grafana annotations HTTP API (grafana.com/docs/grafana/latest/developers/
// http_api/annotations): POST /api/annotations with "text", "tags" and
// "time" (epoch milliseconds); without a dashboard it is an organization
// annotation, shown on dashboards whose annotation query filters on its
// tags. Authorization is a bearer token (service account) or basic auth.
//
// The address is the annotations URL (https://grafana/api/annotations).
// Tags follow the reference's, so that dashboards set up for it keep
// matching: "flux", the reporting controller, "kind: K", "name: N",
// "namespace: NS", then ours: "severity: S", "revision: R", "resolved"
// on a recovery, and each metadata entry as "key: value".

// grafanaAnnotation is the body of a create-annotation request.
type grafanaAnnotation struct {
	Time int64    `json:"time"`
	Text string   `json:"text"`
	Tags []string `json:"tags"`
}

func newGrafana(cfg notify.Config) (*target, error) {
	if _, err := address(cfg, ""); err != nil {
		return nil, err
	}
	headers, secrets := authorization(cfg)
	return &target{secrets: secrets, request: func(m notify.Message) (notify.Request, error) {
		body := grafanaAnnotation{Time: eventTime(m).UnixMilli(), Text: objectName(m) + ": " + notify.Text(m), Tags: grafanaTags(m)}
		return notify.Request{URL: cfg.Address, Headers: headers, Body: body}, nil
	}}, nil
}

// grafanaTags returns the annotation's tags.
func grafanaTags(m notify.Message) []string {
	o := m.InvolvedObject
	tags := []string{"flux"}
	if m.ReportingController != "" {
		tags = append(tags, m.ReportingController)
	}
	tags = append(tags, "kind: "+o.Kind, "name: "+o.Name, "namespace: "+o.Namespace, "severity: "+severity(m))
	if rev := revision(m); rev != "" {
		tags = append(tags, "revision: "+rev)
	}
	if m.Resolves {
		tags = append(tags, "resolved")
	}
	for _, kv := range metadata(m) {
		tags = append(tags, kv[0]+": "+kv[1])
	}
	return tags
}
