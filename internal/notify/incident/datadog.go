package incident

import (
	"time"

	"github.com/windlass-dev/windlass/internal/notify"
)

// Datadog "Post an event" (docs.datadoghq.com/api/latest/events, v1): POST
// <site API host>/api/v1/events with the API key in the DD-API-KEY header;
// body title and text (both required; text is cut at 4000 characters),
// alert_type (error, warning, info, success, ...), tags ("key:value"),
// aggregation_key (at most 100 characters: events with one key are grouped
// together), date_happened (POSIX seconds, no older than 18 hours).
//
// The address is the site's API host (https://api.datadoghq.com, the
// default; https://api.datadoghq.eu, ...) or the full events URL; the
// Secret's token is the API key (not an application key).
//
// Titles are cut at 100 characters (the limit of the v2 API's title).
// alert_type is "error" for a failure, "success" for its recovery, "info"
// otherwise; aggregation_key is the object, so that a failure and its
// recovery are grouped.

// datadogAPI is the default address (site US1).
const datadogAPI = "https://api.datadoghq.com"

// ddEvent is a post-event request.
type ddEvent struct {
	Title          string   `json:"title"`
	Text           string   `json:"text"`
	AlertType      string   `json:"alert_type"`
	Tags           []string `json:"tags"`
	AggregationKey string   `json:"aggregation_key"`
	DateHappened   int64    `json:"date_happened,omitempty"`
}

func newDatadog(cfg notify.Config) (*target, error) {
	u, err := address(cfg, datadogAPI)
	if err != nil {
		return nil, err
	}
	if err := requireToken(cfg, "the Datadog API key"); err != nil {
		return nil, err
	}
	events := withPath(u, "/api/v1/events")
	headers := map[string]string{"DD-API-KEY": cfg.Token}
	return &target{secrets: []string{cfg.Token}, request: func(m notify.Message) (notify.Request, error) {
		return notify.Request{URL: events, Headers: headers, Body: ddEventOf(m, time.Now())}, nil
	}}, nil
}

// ddEventOf returns the Datadog event of m.
func ddEventOf(m notify.Message, now time.Time) ddEvent {
	title, alertType := objectName(m)+": "+m.Reason, severity(m)
	if m.Resolves {
		title, alertType = "Resolved: "+title, "success"
	}
	o := m.InvolvedObject
	tags := []string{"flux", "kind:" + o.Kind, "name:" + o.Name, "namespace:" + o.Namespace, "severity:" + severity(m), "reason:" + m.Reason}
	if rev := revision(m); rev != "" {
		tags = append(tags, "revision:"+rev)
	}
	for _, kv := range metadata(m) {
		tags = append(tags, kv[0]+":"+kv[1])
	}
	ev := ddEvent{
		Title:          truncate(title, 100),
		Text:           truncate(notify.Text(m), 4000),
		AlertType:      alertType,
		Tags:           tags,
		AggregationKey: boundedKey(notify.ObjectID(m), 100),
	}
	if at := eventTime(m); at.After(now.Add(-18*time.Hour)) && !at.After(now) {
		ev.DateHappened = at.Unix()
	}
	return ev
}
