// Package incident holds the notification Provider types that open and
// close incidents, or mark observability timelines, and the one that starts
// CI workflows:
//
//   - alertmanager: a Prometheus Alertmanager alert (API v2), resolved by
//     the recovery message;
//   - grafana: a Grafana annotation;
//   - pagerduty: a PagerDuty Events API v2 alert, resolved by the recovery
//     message; info events are change events;
//   - opsgenie: an Opsgenie alert, closed by the recovery message;
//   - datadog: a Datadog event;
//   - incident.io: an incident.io alert (Alert Events V2, HTTP source),
//     resolved by the recovery message;
//   - otel: an OpenTelemetry span (OTLP/HTTP), in the trace of the
//     event's revision;
//   - sentry: a Sentry event sent to the project of a DSN;
//   - githubdispatch: a GitHub repository_dispatch event.
//
// Every type renders the text of notify.Text (so "Resolved: " and "(and N
// more like it)") and the event's revision. The incident types derive the
// identity of an incident (PagerDuty dedup_key, Alertmanager labels,
// Opsgenie alias) from the object alone, never from the event's reason or
// revision: the failure and the recovery of an object have different
// reasons and often different revisions, and the recovery must close what
// the failure opened.
//
// Errors never hold a token, a routing key or the credentials of an
// address: Do redacts URLs, and Post removes the provider's secrets from
// whatever the service answered.
package incident

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// Types are the provider types this package serves.
var Types = []string{"alertmanager", "datadog", "githubdispatch", "grafana", "incident.io", "opsgenie", "otel", "pagerduty", "sentry"}

// target is what a provider type makes of a Config: how it turns a message
// into a request, and the secrets its errors must not show.
type target struct {
	request func(m notify.Message) (notify.Request, error)
	secrets []string
}

// builders maps each type to the function that validates a Config and
// builds its target.
var builders = map[string]func(cfg notify.Config) (*target, error){
	"alertmanager":   newAlertmanager,
	"datadog":        newDatadog,
	"githubdispatch": newGitHubDispatch,
	"grafana":        newGrafana,
	"incident.io":    newIncidentIO,
	"opsgenie":       newOpsgenie,
	"otel":           newOTel,
	"pagerduty":      newPagerDuty,
	"sentry":         newSentry,
}

// New returns the Notifier of cfg.Type, after checking that cfg holds what
// the type needs: an address that is not link-local (unless allowed), and
// a token or key where the service requires one.
func New(cfg notify.Config) (notify.Notifier, error) {
	build, ok := builders[cfg.Type]
	if !ok {
		return nil, fmt.Errorf("unknown provider type %q (this package serves %s)", cfg.Type, strings.Join(Types, ", "))
	}
	t, err := build(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s provider: %w", cfg.Type, err)
	}
	return &poster{cfg: cfg, client: notify.Client(cfg), target: t}, nil
}

// poster is the Notifier of every type: it builds the type's request and
// sends it with notify.Do.
type poster struct {
	cfg    notify.Config
	client *http.Client
	target *target
}

// Post implements notify.Notifier.
func (p *poster) Post(ctx context.Context, m notify.Message) error {
	req, err := p.target.request(m)
	if err != nil {
		return fmt.Errorf("%s provider: %w", p.cfg.Type, err)
	}
	return notify.NewScrubber(p.cfg, p.target.secrets...).Error(notify.Do(ctx, p.client, p.cfg, req))
}

// address returns cfg's address checked, or fallback when cfg has none
// (an empty fallback makes the address required).
func address(cfg notify.Config, fallback string) (*url.URL, error) {
	raw := cfg.Address
	if raw == "" {
		raw = fallback
	}
	if raw == "" {
		return nil, errors.New("an address is required (spec.address or the Secret's 'address')")
	}
	return notify.CheckAddress(raw, cfg.AddressPolicy())
}

// requireToken refuses a Config without the Secret's token.
func requireToken(cfg notify.Config, what string) error {
	if cfg.Token == "" {
		return fmt.Errorf("the Secret's 'token' is required: it holds %s", what)
	}
	return nil
}

// authorization returns the Authorization header of a service that takes a
// bearer token or basic auth (the token wins when both are set), and the
// secrets it carries.
func authorization(cfg notify.Config) (map[string]string, []string) {
	switch {
	case cfg.Token != "":
		return map[string]string{"Authorization": "Bearer " + cfg.Token}, []string{cfg.Token}
	case cfg.BasicUsername != "" || cfg.Password != "":
		basic := base64.StdEncoding.EncodeToString([]byte(cfg.BasicUsername + ":" + cfg.Password))
		return map[string]string{"Authorization": "Basic " + basic}, []string{basic, cfg.Password}
	}
	return map[string]string{}, nil
}

// withPath returns u (without query or fragment) with suffix appended to
// its path, unless the path already ends with it.
func withPath(u *url.URL, suffix string) string {
	out := *u
	out.RawQuery, out.Fragment, out.RawPath = "", "", ""
	path := strings.TrimRight(out.Path, "/")
	if !strings.HasSuffix(path, suffix) {
		path += suffix
	}
	out.Path = path
	return out.String()
}

// truncate cuts s to at most n runes, ending with "…" when it cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}

// boundedKey returns key if it fits in n bytes, or else a prefix of it
// (cut on a character boundary) followed by a hash of the whole, so that
// distinct keys stay distinct.
func boundedKey(key string, n int) string {
	if len(key) <= n {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	cut := n - 17
	for cut > 0 && !utf8.RuneStart(key[cut]) {
		cut--
	}
	return key[:cut] + "-" + hex.EncodeToString(sum[:8])
}

// objectName names the object as "Kind/name.namespace", the form of the
// reference's GitHub dispatch event types and of the titles here.
func objectName(m notify.Message) string {
	o := m.InvolvedObject
	return o.Kind + "/" + o.Name + "." + o.Namespace
}

// revision returns the event's revision, or "".
func revision(m notify.Message) string {
	rev, _ := m.Revision()
	return rev
}

// metadata returns the event's metadata as sorted key-value pairs, without
// the token (an internal deduplication key, of no use to people).
func metadata(m notify.Message) [][2]string {
	var out [][2]string
	for _, kv := range notify.Fields(m) {
		if kv[0] != eventv1.MetaToken && !strings.HasSuffix(kv[0], "/"+eventv1.MetaToken) {
			out = append(out, kv)
		}
	}
	return out
}

// details returns the event's metadata with its reason and revision under
// plain keys, for the services that show a map of details.
func details(m notify.Message) map[string]string {
	out := map[string]string{"reason": m.Reason}
	for _, kv := range metadata(m) {
		out[kv[0]] = kv[1]
	}
	if rev := revision(m); rev != "" {
		out[eventv1.MetaRevision] = rev
	}
	return out
}

// eventTime returns when the event happened, or now if it does not say.
func eventTime(m notify.Message) time.Time {
	if m.Timestamp.IsZero() {
		return time.Now()
	}
	return m.Timestamp.Time
}

// severity is the message's severity as these services say it: a message
// that resolves a failure is not itself an error.
func severity(m notify.Message) string {
	if notify.IsError(m) {
		return eventv1.SeverityError
	}
	return eventv1.SeverityInfo
}
