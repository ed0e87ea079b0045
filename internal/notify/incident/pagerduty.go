package incident

import (
	"errors"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/internal/notify"
)

// PagerDuty Events API v2 (developer.pagerduty.com, "Send an Alert Event"
// and "Send a Change Event"): alert events go to /v2/enqueue with
// routing_key, event_action (trigger, acknowledge, resolve), dedup_key
// (at most 255 characters; a resolve with the trigger's dedup_key resolves
// the alert it opened) and, for a trigger, payload {summary (at most 1024
// characters), source, severity (critical, error, warning, info),
// timestamp, component, group, class, custom_details}. Change events,
// "a change in a system that does not represent a problem", go to
// /v2/change/enqueue with routing_key and payload {summary, timestamp,
// source, custom_details}; they show in the service's timeline and page
// no one.
//
// As in the reference, spec.channel is the routing (integration) key; the
// Secret's token is taken when the channel is empty, for those who keep
// the key secret. The address is the Events API host
// (https://events.pagerduty.com, the default; https://events.eu.pagerduty.com
// in the EU) or its full /v2/enqueue URL.
//
// A failure triggers an alert whose dedup_key is the object
// ("kustomization/apps.flux-system"), the recovery resolves that dedup_key,
// and info events are change events, as the reference sends them.

// pagerDutyEvents is the default address.
const pagerDutyEvents = "https://events.pagerduty.com"

// pdAlert is an alert event.
type pdAlert struct {
	RoutingKey  string     `json:"routing_key"`
	EventAction string     `json:"event_action"`
	DedupKey    string     `json:"dedup_key"`
	Client      string     `json:"client,omitempty"`
	Payload     *pdPayload `json:"payload,omitempty"`
}

// pdChange is a change event.
type pdChange struct {
	RoutingKey string    `json:"routing_key"`
	Payload    pdPayload `json:"payload"`
}

// pdPayload is the payload of an alert or change event.
type pdPayload struct {
	Summary       string            `json:"summary"`
	Source        string            `json:"source"`
	Severity      string            `json:"severity,omitempty"`
	Timestamp     string            `json:"timestamp,omitempty"`
	Component     string            `json:"component,omitempty"`
	Group         string            `json:"group,omitempty"`
	Class         string            `json:"class,omitempty"`
	CustomDetails map[string]string `json:"custom_details,omitempty"`
}

func newPagerDuty(cfg notify.Config) (*target, error) {
	u, err := address(cfg, pagerDutyEvents)
	if err != nil {
		return nil, err
	}
	key := cfg.Channel
	if key == "" {
		key = cfg.Token
	}
	if key == "" {
		return nil, errors.New("the routing (integration) key is required: set spec.channel, or the Secret's 'token'")
	}
	base := withPath(u, "")
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/v2/enqueue"), "/")
	alertURL, changeURL := base+"/v2/enqueue", base+"/v2/change/enqueue"
	return &target{secrets: []string{key, cfg.Token}, request: func(m notify.Message) (notify.Request, error) {
		dedup := boundedKey(notify.ObjectID(m), 255)
		switch {
		case m.Resolves:
			return notify.Request{URL: alertURL, Body: pdAlert{RoutingKey: key, EventAction: "resolve", DedupKey: dedup}}, nil
		case notify.IsError(m):
			p := pdPayloadOf(m)
			p.Severity, p.Component, p.Group, p.Class = "error", m.ReportingController, m.InvolvedObject.Namespace, m.Reason
			return notify.Request{URL: alertURL, Body: pdAlert{RoutingKey: key, EventAction: "trigger", DedupKey: dedup, Client: "Windlass", Payload: &p}}, nil
		default:
			return notify.Request{URL: changeURL, Body: pdChange{RoutingKey: key, Payload: pdPayloadOf(m)}}, nil
		}
	}}, nil
}

// pdPayloadOf returns the fields common to alert and change payloads.
func pdPayloadOf(m notify.Message) pdPayload {
	d := details(m)
	d["message"] = notify.Text(m)
	return pdPayload{
		Summary:       truncate(objectName(m)+": "+notify.Text(m), 1024),
		Source:        notify.ObjectID(m),
		Timestamp:     eventTime(m).UTC().Format(time.RFC3339),
		CustomDetails: d,
	}
}
