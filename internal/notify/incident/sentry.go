package incident

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/internal/notify"
)

// Sentry ingestion (develop.sentry.dev, "Authentication", "Envelopes",
// "Event Payloads"): a DSN {PROTOCOL}://{PUBLIC_KEY}[:{SECRET_KEY}]@{HOST}
// {PATH}/{PROJECT_ID} names the endpoint {PROTOCOL}://{HOST}{PATH}/api/
// {PROJECT_ID}/envelope/ and the credentials, sent as
// "X-Sentry-Auth: Sentry sentry_version=7, sentry_client=..., sentry_key=
// <public key>[, sentry_secret=<secret key>]". An envelope is a JSON header
// line ({"event_id", "sent_at"}), then per item a JSON item header
// ({"type":"event","length":N}) and its payload, each ending with "\n";
// content type application/x-sentry-envelope. An event carries event_id
// (32 lowercase hex digits of a UUIDv4), timestamp, platform, level
// (fatal, error, warning, info, debug), logger, logentry.formatted,
// environment, tags, extra, fingerprint.
//
// The address is the DSN (as in the reference, best kept in the Secret's
// 'address'); spec.channel, when set, is the event's environment, as in
// the reference. A failure is an error event, other messages are info
// events, fingerprinted by object and reason so that one object's repeated
// failures make one issue.
//
// Limits: Sentry's ingestion API cannot resolve an issue (that takes its
// web API and an auth token), so a recovery is an info event saying
// "Resolved: ..."; and info events are info-level events, not the
// transactions with spans that the reference sends for them.

// sentryEvent is the event item of an envelope.
type sentryEvent struct {
	EventID     string            `json:"event_id"`
	Timestamp   string            `json:"timestamp"`
	Platform    string            `json:"platform"`
	Level       string            `json:"level"`
	Logger      string            `json:"logger,omitempty"`
	LogEntry    map[string]string `json:"logentry"`
	Environment string            `json:"environment,omitempty"`
	Tags        map[string]string `json:"tags"`
	Extra       map[string]string `json:"extra"`
	Fingerprint []string          `json:"fingerprint"`
}

func newSentry(cfg notify.Config) (*target, error) {
	u, err := address(cfg, "")
	if err != nil {
		return nil, err
	}
	key := u.User.Username()
	secret, hasSecret := u.User.Password()
	path := strings.TrimRight(u.Path, "/")
	slash := strings.LastIndex(path, "/")
	if key == "" || slash < 0 || slash == len(path)-1 {
		return nil, errors.New("the address must be a Sentry DSN, https://<public key>@<host>/<project id>")
	}
	endpoint := u.Scheme + "://" + u.Host + path[:slash] + "/api/" + path[slash+1:] + "/envelope/"
	auth := "Sentry sentry_version=7, sentry_client=windlass/1, sentry_key=" + key
	if hasSecret {
		auth += ", sentry_secret=" + secret
	}
	headers := map[string]string{"X-Sentry-Auth": auth}
	return &target{secrets: []string{key, secret}, request: func(m notify.Message) (notify.Request, error) {
		body, err := sentryEnvelope(sentryEventOf(m, cfg.Channel), time.Now())
		if err != nil {
			return notify.Request{}, err
		}
		return notify.Request{URL: endpoint, Headers: headers, Body: body, ContentType: "application/x-sentry-envelope"}, nil
	}}, nil
}

// sentryEventOf returns the Sentry event of m.
func sentryEventOf(m notify.Message, environment string) sentryEvent {
	o := m.InvolvedObject
	tags := map[string]string{"kind": o.Kind, "name": o.Name, "namespace": o.Namespace, "reason": m.Reason}
	if rev := revision(m); rev != "" {
		tags["revision"] = truncate(rev, 200)
	}
	return sentryEvent{
		EventID:     newEventID(),
		Timestamp:   eventTime(m).UTC().Format(time.RFC3339),
		Platform:    "other",
		Level:       severity(m),
		Logger:      m.ReportingController,
		LogEntry:    map[string]string{"formatted": objectName(m) + ": " + notify.Text(m)},
		Environment: environment,
		Tags:        tags,
		Extra:       details(m),
		Fingerprint: []string{notify.ObjectID(m), m.Reason},
	}
}

// sentryEnvelope returns the envelope of one event.
func sentryEnvelope(ev sentryEvent, now time.Time) ([]byte, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	header, _ := json.Marshal(map[string]string{"event_id": ev.EventID, "sent_at": now.UTC().Format(time.RFC3339)})
	item, _ := json.Marshal(map[string]any{"type": "event", "length": len(payload), "content_type": "application/json"})
	return bytes.Join([][]byte{header, item, payload, nil}, []byte("\n")), nil
}

// newEventID returns a random UUIDv4 as 32 lowercase hex digits.
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}
