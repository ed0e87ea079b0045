package incident

import (
	"regexp"
	"strings"
	"time"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// Alertmanager API v2 (prometheus.io/docs/alerting/latest/clients): POST a
// JSON array of alerts to /api/v2/alerts; "the labels of each alert are
// used to identify identical instances of an alert", annotations are not;
// startsAt and endsAt are RFC 3339 and optional, and an alert whose endsAt
// has passed is resolved.
//
// The address is the full alerts URL (http://am:9093/api/v2/alerts), with
// basic auth in it, or a bearer token or the Secret's username and
// password.
//
// Labels are the alert's identity, so they come from the object and from
// nothing that changes between its failure and its recovery:
//   - alertname "Flux<Kind>" (the reference's prefix, so that routes
//     matching alertname=~"Flux.*" keep working; not the reason, which
//     differs between the failure and the recovery);
//   - severity: "error" for a failure and for the message that resolves
//     it (it must name the alert it resolves), "info" for other events;
//   - kind, name, namespace;
//   - metadata that an Alert's eventMetadata or the object's event
//     annotations give (cluster, env, team: what Alertmanager routes on),
//     when the key is a valid label name; metadata that varies per event
//     (revision, token, digest, summary, group-prefixed keys) goes to
//     annotations.
//
// A failure fires with startsAt = the event's time and no endsAt, so that
// Alertmanager keeps it firing for its resolve_timeout after the last
// failure message (the folding window re-sends it). The recovery sends the
// same labels with startsAt = endsAt = now, which ends the firing alert.
// Info events are sent as the reference sends them, as alerts of severity
// "info": their labels differ from the failure's, so they neither overwrite
// nor resolve it, and Alertmanager resolves them after resolve_timeout.

// labelName is a valid Prometheus label name, in the classic charset that
// every Alertmanager version accepts.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// variableMetadata are metadata keys whose values change from event to
// event of one object: never labels.
var variableMetadata = map[string]bool{
	eventv1.MetaRevision: true, eventv1.MetaOriginRevision: true, eventv1.MetaToken: true,
	eventv1.MetaCommitStatus: true, eventv1.MetaChangeRequest: true, eventv1.MetaSummary: true,
	"checksum": true, "digest": true, "commit": true,
}

// amAlert is one postable alert of the Alertmanager API v2.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    string            `json:"startsAt,omitempty"`
	EndsAt      string            `json:"endsAt,omitempty"`
}

func newAlertmanager(cfg notify.Config) (*target, error) {
	u, err := address(cfg, "")
	if err != nil {
		return nil, err
	}
	headers, secrets := authorization(cfg)
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p)
	}
	return &target{secrets: secrets, request: func(m notify.Message) (notify.Request, error) {
		return notify.Request{URL: cfg.Address, Headers: headers, Body: []amAlert{alertOf(m, time.Now())}}, nil
	}}, nil
}

// alertOf returns the alert of m: firing, or ended at now when m resolves
// a failure.
func alertOf(m notify.Message, now time.Time) amAlert {
	labels, annotations := alertLabels(m), alertAnnotations(m)
	if m.Resolves {
		at := now.UTC().Format(time.RFC3339)
		return amAlert{Labels: labels, Annotations: annotations, StartsAt: at, EndsAt: at}
	}
	start := m.Timestamp.Time
	if start.IsZero() || start.After(now) {
		start = now
	}
	return amAlert{Labels: labels, Annotations: annotations, StartsAt: start.UTC().Format(time.RFC3339)}
}

// alertLabels returns the alert's identity: the same for the failure of an
// object and for the message that resolves it.
func alertLabels(m notify.Message) map[string]string {
	labels := map[string]string{}
	for k, v := range m.Metadata {
		if labelName.MatchString(k) && !variableMetadata[k] {
			labels[k] = v
		}
	}
	sev := eventv1.SeverityError
	if m.Severity != eventv1.SeverityError && !m.Resolves {
		sev = m.Severity
	}
	o := m.InvolvedObject
	labels["alertname"] = "Flux" + o.Kind
	labels["severity"] = sev
	labels["kind"], labels["name"], labels["namespace"] = o.Kind, o.Name, o.Namespace
	return labels
}

// alertAnnotations returns what the alert says: the text, summary, reason,
// revision, and the metadata that is not a label.
func alertAnnotations(m notify.Message) map[string]string {
	ann := map[string]string{}
	for k, v := range m.Metadata {
		short := k[strings.LastIndex(k, "/")+1:]
		if labelName.MatchString(short) && variableMetadata[short] && short != eventv1.MetaToken {
			ann[short] = v
		}
	}
	ann["message"] = notify.Text(m)
	ann["reason"] = m.Reason
	if ann["summary"] == "" {
		ann["summary"] = objectName(m) + ": " + m.Reason
	}
	if rev := revision(m); rev != "" {
		ann[eventv1.MetaRevision] = rev
	}
	if m.ReportingController != "" {
		ann["reportingController"] = m.ReportingController
	}
	return ann
}
