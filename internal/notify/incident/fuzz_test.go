package incident

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/windlass-dev/windlass/internal/notify/notifytest"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/windlass-dev/windlass/internal/notify"
)

// fuzzLimit is a field of a type's JSON body that the type bounds, in
// characters, or in bytes for the keys that boundedKey cuts.
type fuzzLimit struct {
	path  []string
	max   int
	bytes bool
}

// FuzzRequests builds, for every incident type, the request of a message
// made from a fuzzed event. It asserts that a message of valid UTF-8
// always gives a request; that the request goes to the configured host,
// opsgenie's close URL with the alias as one path segment; that JSON
// bodies encode, with every field the type bounds (titles, texts, dedup
// keys, aliases) within its limit as the service decodes it, and every
// string valid UTF-8 when the event is; that Alertmanager label names are
// Prometheus label names; that the Sentry envelope is three JSON lines
// whose item length is the payload's; and that the OTLP body decodes.
func FuzzRequests(f *testing.F) {
	notifytest.AddSeeds(f, "n/../x", "<b>bold</b> & `code`\n\nsecond line", "second revision", true)
	configs := map[string]notify.Config{
		"alertmanager":   {Address: "https://am.example.com/api/v2/alerts", Token: "am-token"},
		"datadog":        {Token: "dd-key"},
		"githubdispatch": {Address: "https://github.com/acme/app", Token: "gh-token"},
		"grafana":        {Address: "https://grafana.example.com/api/annotations", BasicUsername: "admin", Password: "pw"},
		"incident.io":    {Address: "https://api.incident.io/v2/alert_events/http/01GW2G3V0S59R238FAHPDS1R66", Token: "io-token"},
		"opsgenie":       {Token: "og-key"},
		"otel":           {Address: "https://otel.example.com", Token: "otel-token"},
		"pagerduty":      {Channel: "pd-routing-key"},
		"sentry":         {Address: "https://pubkey@sentry.example.com/prefix/42", Channel: "staging"},
	}
	hosts := map[string]string{
		"alertmanager": "am.example.com", "datadog": "api.datadoghq.com", "githubdispatch": "api.github.com",
		"grafana": "grafana.example.com", "incident.io": "api.incident.io", "opsgenie": "api.opsgenie.com",
		"otel": "otel.example.com", "pagerduty": "events.pagerduty.com", "sentry": "sentry.example.com",
	}
	limits := map[string][]fuzzLimit{
		"incident.io": {{path: []string{"title"}, max: 255}, {path: []string{"description"}, max: 15000},
			{path: []string{"deduplication_key"}, max: ioKeyLimit, bytes: true}},
		"opsgenie": {{path: []string{"message"}, max: 130}, {path: []string{"alias"}, max: 512, bytes: true},
			{path: []string{"description"}, max: 15000}, {path: []string{"note"}, max: 25000}},
		"pagerduty": {{path: []string{"dedup_key"}, max: 255, bytes: true}, {path: []string{"payload", "summary"}, max: 1024}},
		"datadog": {{path: []string{"title"}, max: 100}, {path: []string{"text"}, max: 4000},
			{path: []string{"aggregation_key"}, max: 100, bytes: true}},
		"sentry": {{path: []string{"tags", "revision"}, max: 200}},
	}
	targets := map[string]*target{}
	for _, typ := range Types {
		cfg := configs[typ]
		cfg.Type = typ
		tg, err := builders[typ](cfg)
		if err != nil {
			f.Fatalf("%s: %v", typ, err)
		}
		targets[typ] = tg
	}
	f.Fuzz(func(t *testing.T, kind, name, namespace, reason, text, revision, key, value string, failed, resolves bool, folded uint8) {
		m := notifytest.Message(kind, name, namespace, reason, text, revision, key, value, failed, resolves, folded)
		valid := notifytest.ValidUTF8(kind, name, namespace, reason, text, revision, key, value)
		for _, typ := range Types {
			req, err := targets[typ].request(m)
			if err != nil {
				if valid {
					t.Fatalf("%s: %v", typ, err)
				}
				continue
			}
			u, err := url.Parse(req.URL)
			if err != nil || u.Host != hosts[typ] {
				t.Fatalf("%s: the request goes to %q", typ, req.URL)
			}
			if typ == "opsgenie" && m.Resolves {
				segments := strings.Split(u.EscapedPath(), "/")
				if len(segments) != 5 || segments[2] != "alerts" || segments[4] != "close" {
					t.Fatalf("%s: the close URL %q does not name the alias as one segment", typ, req.URL)
				}
				if alias, err := url.PathUnescape(segments[3]); err != nil || alias == "." || alias == ".." {
					t.Fatalf("%s: the close URL %q names the alias %q", typ, req.URL, alias)
				}
			}
			switch body := req.Body.(type) {
			case []byte:
				checkBytesBody(t, typ, body)
				if typ != "sentry" {
					continue
				}
				lines := bytes.Split(body, []byte("\n"))
				var payload map[string]any
				if err := json.Unmarshal(lines[2], &payload); err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				checkLimits(t, typ, payload, limits[typ], valid)
			default:
				data, err := json.Marshal(req.Body)
				if err != nil || !json.Valid(data) {
					t.Fatalf("%s: the body does not encode: %v", typ, err)
				}
				if valid {
					checkUTF8(t, typ, req.Body)
				}
				var decoded any
				if err := json.Unmarshal(data, &decoded); err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				if typ == "alertmanager" {
					for k := range decoded.([]any)[0].(map[string]any)["labels"].(map[string]any) {
						if !labelName.MatchString(k) {
							t.Fatalf("%s: the label name %q", typ, k)
						}
					}
					continue
				}
				checkLimits(t, typ, decoded.(map[string]any), limits[typ], valid)
			}
		}
	})
}

// checkBytesBody checks the bodies that are not JSON values: the Sentry
// envelope and the OTLP request.
func checkBytesBody(t *testing.T, typ string, body []byte) {
	t.Helper()
	switch typ {
	case "sentry":
		lines := bytes.Split(body, []byte("\n"))
		if len(lines) != 4 || len(lines[3]) != 0 {
			t.Fatalf("%s: the envelope has %d lines", typ, len(lines))
		}
		var item struct {
			Length int `json:"length"`
		}
		if !json.Valid(lines[0]) || json.Unmarshal(lines[1], &item) != nil || !json.Valid(lines[2]) || item.Length != len(lines[2]) {
			t.Fatalf("%s: the envelope is not three JSON lines with the payload's length: %q", typ, body)
		}
	case "otel":
		var r coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &r); err != nil || len(r.GetResourceSpans()) != 1 {
			t.Fatalf("%s: the body does not decode: %v", typ, err)
		}
	default:
		t.Fatalf("%s: a body of bytes", typ)
	}
}

// checkLimits fails t when a field of body, as the service decodes it, is
// over its limit; with valid, also when it is not valid UTF-8.
func checkLimits(t *testing.T, typ string, body map[string]any, limits []fuzzLimit, valid bool) {
	t.Helper()
	for _, l := range limits {
		var v any = body
		for _, k := range l.path {
			obj, _ := v.(map[string]any)
			v = obj[k]
		}
		s, _ := v.(string)
		n := utf8.RuneCountInString(s)
		if l.bytes {
			n = len(s)
		}
		if n > l.max && valid {
			t.Fatalf("%s: %s is %d long, over its limit of %d: %q", typ, strings.Join(l.path, "."), n, l.max, s)
		}
	}
}

// checkUTF8 fails t when a string of v, a body before encoding, is not
// valid UTF-8: JSON would carry it altered.
func checkUTF8(t *testing.T, typ string, v any) {
	t.Helper()
	var walk func(reflect.Value)
	walk = func(x reflect.Value) {
		switch x.Kind() {
		case reflect.String:
			if !utf8.ValidString(x.String()) {
				t.Fatalf("%s: the body holds a string that is not valid UTF-8: %q", typ, x.String())
			}
		case reflect.Pointer, reflect.Interface:
			if !x.IsNil() {
				walk(x.Elem())
			}
		case reflect.Struct:
			for i := range x.NumField() {
				walk(x.Field(i))
			}
		case reflect.Map:
			for it := x.MapRange(); it.Next(); {
				walk(it.Key())
				walk(it.Value())
			}
		case reflect.Slice, reflect.Array:
			for i := range x.Len() {
				walk(x.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(v))
}
