// Package chat holds the chat and generic provider types of the
// notification Provider: generic and generic-hmac webhooks, and the chat
// services slack, msteams, discord, googlechat, rocket, matrix, webex,
// telegram, lark, zulip and zoom. Each type turns a notify.Message into the
// request its service documents (the payload of each type is described,
// with the documentation it follows, next to its code) and sends it with
// notify.Do.
//
// Every type shows the text of notify.Text (so folded and resolved
// messages say so), the object (notify.ObjectID), the revision when the
// event has one, and the event's other metadata. Services with colors show
// failures in red and everything else, resolved failures included, in
// green.
//
// Errors never quote the token, the password, or the path of the address
// (webhook URLs carry their secret there); notify.Do already drops the
// address's userinfo and query.
package chat

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// Types are the provider types this package serves.
var Types = []string{
	"generic", "generic-hmac", "slack", "msteams", "discord", "googlechat",
	"rocket", "matrix", "webex", "telegram", "lark", "zulip", "zoom",
}

// requestFunc builds the request that sends one message.
type requestFunc func(m notify.Message) (notify.Request, error)

// constructors validate a Config for their type and return how its
// messages are sent.
var constructors = map[string]func(cfg notify.Config) (requestFunc, error){
	"generic":      newGeneric,
	"generic-hmac": newGenericHMAC,
	"slack":        newSlack,
	"msteams":      newTeams,
	"discord":      newDiscord,
	"googlechat":   newGoogleChat,
	"rocket":       newRocket,
	"matrix":       newMatrix,
	"webex":        newWebex,
	"telegram":     newTelegram,
	"lark":         newLark,
	"zulip":        newZulip,
	"zoom":         newZoom,
}

// New validates cfg for its type and returns the Notifier that posts to
// the service. An unknown type, a missing address, token or channel the
// service needs, or an address that is refused (see notify.CheckAddress)
// is an error; no error quotes a secret.
func New(cfg notify.Config) (notify.Notifier, error) {
	s := notify.NewScrubber(cfg, addressPath(cfg.Address)...)
	construct, ok := constructors[cfg.Type]
	if !ok {
		return nil, fmt.Errorf("unknown provider type %q: this package serves %s", cfg.Type, strings.Join(Types, ", "))
	}
	build, err := construct(cfg)
	if err != nil {
		return nil, s.Error(err)
	}
	return &notifier{cfg: cfg, client: notify.Client(cfg), build: build, scrub: s}, nil
}

// notifier posts the messages of one Provider.
type notifier struct {
	cfg    notify.Config
	client *http.Client
	build  requestFunc
	scrub  notify.Scrubber
}

// Post sends m in one request.
func (n *notifier) Post(ctx context.Context, m notify.Message) error {
	req, err := n.build(m)
	if err != nil {
		return n.scrub.Error(fmt.Errorf("%s provider: %w", n.cfg.Type, err))
	}
	return n.scrub.Error(notify.Do(ctx, n.client, n.cfg, req))
}

// requireAddress returns cfg's address, checked; it is an error when the
// address is missing.
func requireAddress(cfg notify.Config, what string) (*url.URL, error) {
	if cfg.Address == "" {
		return nil, fmt.Errorf("%s provider: the address (%s) is required", cfg.Type, what)
	}
	return checkAddress(cfg, cfg.Address)
}

// addressOr returns cfg's address, or def when cfg has none, checked.
func addressOr(cfg notify.Config, def string) (*url.URL, error) {
	if cfg.Address == "" {
		return checkAddress(cfg, def)
	}
	return checkAddress(cfg, cfg.Address)
}

func checkAddress(cfg notify.Config, address string) (*url.URL, error) {
	u, err := notify.CheckAddress(address, cfg.AddressPolicy())
	if err != nil {
		return nil, fmt.Errorf("%s provider: %w", cfg.Type, err)
	}
	return u, nil
}

// require returns an error naming what is missing when value is empty.
func require(cfg notify.Config, value, what string) error {
	if value == "" {
		return fmt.Errorf("%s provider: %s is required", cfg.Type, what)
	}
	return nil
}

// join appends path, which starts with '/', to the base URL u.
func join(u *url.URL, path string) string {
	return strings.TrimSuffix(u.String(), "/") + path
}

// bearer is the Authorization header of a token.
func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// basicAuth is the value of an Authorization header for basic auth.
func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// summary is what every chat type shows of a message.
type summary struct {
	// Title names the object: "kustomization/apps.flux-system".
	Title string
	// Text is notify.Text: the message, "Resolved: ", the folded count.
	Text string
	// Revision is the event's revision, or "".
	Revision string
	// Fields are the metadata other than the revision and the keys that
	// only the machinery reads (token, commit_status), sorted by key.
	Fields [][2]string
	// Failed tells that the message reports a failure (notify.IsError).
	Failed bool
}

func summarize(m notify.Message) summary {
	s := summary{Title: notify.ObjectID(m), Text: notify.Text(m), Failed: notify.IsError(m)}
	s.Revision, _ = m.Revision()
	for _, f := range notify.Fields(m) {
		if !machineryKey(f[0]) {
			s.Fields = append(s.Fields, f)
		}
	}
	return s
}

// machineryKey tells whether a metadata key is the revision (shown on its
// own) or a key that only the notification machinery reads.
func machineryKey(key string) bool {
	last := key[strings.LastIndexByte(key, '/')+1:]
	if last == eventv1.MetaRevision {
		return strings.Contains(key, "/")
	}
	return last == eventv1.MetaToken || last == eventv1.MetaCommitStatus
}

// facts are the revision, then the fields, as key-value pairs.
func (s summary) facts() [][2]string {
	if s.Revision == "" {
		return s.Fields
	}
	return append([][2]string{{"revision", s.Revision}}, s.Fields...)
}

// details are the facts, one "key: value" a line.
func (s summary) details() string {
	lines := make([]string, 0, len(s.Fields)+1)
	for _, f := range s.facts() {
		lines = append(lines, f[0]+": "+f[1])
	}
	return strings.Join(lines, "\n")
}

// plain is the whole summary as plain text: the title, the text, the
// details.
func (s summary) plain() string {
	return joinNonEmpty("\n", s.Title, s.Text, s.details())
}

func joinNonEmpty(sep string, parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), sep)
}

// truncate cuts s to at most limit bytes, on a character boundary, ending
// it with "…" when it was cut. Services refuse messages over their limit.
func truncate(s string, limit int) string {
	const ellipsis = "…"
	if len(s) <= limit {
		return s
	}
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// addressPath returns the path of a webhook address, which carries the
// webhook's secret in most chat services; none for an address without one.
func addressPath(address string) []string {
	u, err := url.Parse(address)
	if err != nil || len(u.Path) <= 1 {
		return nil
	}
	return []string{u.EscapedPath(), u.Path}
}
