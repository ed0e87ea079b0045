package incident

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// recorded is a request the loopback server received.
type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// loopback is an HTTPS server that records the requests it receives and
// answers them with status; with echo, it quotes each request's headers
// and body in its answer, as a careless service might.
type loopback struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newLoopback(t *testing.T, status func(n int) int, echo bool) *loopback {
	l := &loopback{}
	l.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.reqs = append(l.reqs, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header, Body: body})
		n := len(l.reqs)
		l.mu.Unlock()
		w.WriteHeader(status(n))
		if echo {
			_ = r.Header.Write(w)
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(l.Close)
	return l
}

// requests returns the requests received so far.
func (l *loopback) requests() []recorded {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]recorded(nil), l.reqs...)
}

// tlsConfig trusts the server's certificate.
func (l *loopback) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(l.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

var (
	object = corev1.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "apps"}
	at     = metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	revKey = "kustomize.toolkit.fluxcd.io/revision"

	failure = notify.Message{Folded: 2, Event: eventv1.Event{InvolvedObject: object, Severity: eventv1.SeverityError,
		Timestamp: at, Message: "health check failed", Reason: "HealthCheckFailed", ReportingController: "kustomize-controller",
		Metadata: map[string]string{revKey: "main@sha1:aaa", "cluster": "prod", "kustomize.toolkit.fluxcd.io/token": "t1"}}}
	recovery = notify.Message{Resolves: true, Event: eventv1.Event{InvolvedObject: object, Severity: eventv1.SeverityInfo,
		Timestamp: at, Message: "Applied revision", Reason: "ReconciliationSucceeded", ReportingController: "kustomize-controller",
		Metadata: map[string]string{revKey: "main@sha1:bbb", "cluster": "prod"}}}
	progress = notify.Message{Event: eventv1.Event{InvolvedObject: object, Severity: eventv1.SeverityInfo,
		Timestamp: at, Message: "Reconciliation started", Reason: "Progressing", ReportingController: "kustomize-controller",
		Metadata: map[string]string{revKey: "main@sha1:bbb", "cluster": "prod"}}}
)

// jsonOf decodes a JSON object.
func jsonOf(g Gomega, b []byte) map[string]any {
	var out map[string]any
	g.Expect(json.Unmarshal(b, &out)).To(Succeed(), string(b))
	return out
}

// providerCase is one provider type: its Config against a loopback server
// at base, the secrets its errors must not show, and the checks of the
// requests of failure, recovery and progress.
type providerCase struct {
	typ     string
	cfg     func(base string) notify.Config
	secrets []string
	check   func(g Gomega, fire, resolve, info recorded)
}

var basic = base64.StdEncoding.EncodeToString([]byte("admin:s3cret-pw"))

var providerCases = []providerCase{{
	typ: "alertmanager", secrets: []string{"am-token"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base + "/api/v2/alerts", Token: "am-token"}
	},
	check: func(g Gomega, fire, resolve, info recorded) {
		alerts := func(r recorded) amAlert {
			g.Expect(r.Path).To(Equal("/api/v2/alerts"))
			g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer am-token"))
			var list []amAlert
			g.Expect(json.Unmarshal(r.Body, &list)).To(Succeed())
			g.Expect(list).To(HaveLen(1))
			return list[0]
		}
		f, r, i := alerts(fire), alerts(resolve), alerts(info)
		g.Expect(f.Labels).To(Equal(map[string]string{"alertname": "FluxKustomization", "severity": "error",
			"kind": "Kustomization", "name": "apps", "namespace": "flux-system", "cluster": "prod"}))
		g.Expect(f.StartsAt).To(Equal(at.UTC().Format(time.RFC3339)))
		g.Expect(f.EndsAt).To(BeEmpty())
		g.Expect(f.Annotations).To(HaveKeyWithValue("message", "health check failed\n(and 2 more like it)"))
		g.Expect(f.Annotations).To(HaveKeyWithValue("revision", "main@sha1:aaa"))
		g.Expect(f.Annotations).NotTo(HaveKey("token"))
		g.Expect(r.Labels).To(Equal(f.Labels), "the recovery names the alert the failure fired")
		end, err := time.Parse(time.RFC3339, r.EndsAt)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(end).To(BeTemporally("~", time.Now(), 5*time.Second))
		g.Expect(r.Annotations).To(HaveKeyWithValue("message", "Resolved: Applied revision"))
		g.Expect(r.Annotations).To(HaveKeyWithValue("revision", "main@sha1:bbb"))
		g.Expect(i.Labels).To(HaveKeyWithValue("severity", "info"))
		g.Expect(i.EndsAt).To(BeEmpty())
	},
}, {
	typ: "grafana", secrets: []string{"s3cret-pw", basic},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base + "/api/annotations", BasicUsername: "admin", Password: "s3cret-pw"}
	},
	check: func(g Gomega, fire, resolve, _ recorded) {
		for _, r := range []recorded{fire, resolve} {
			g.Expect(r.Path).To(Equal("/api/annotations"))
			g.Expect(r.Header.Get("Authorization")).To(Equal("Basic " + basic))
		}
		f, r := jsonOf(g, fire.Body), jsonOf(g, resolve.Body)
		g.Expect(f).To(HaveKeyWithValue("text", "Kustomization/apps.flux-system: health check failed\n(and 2 more like it)"))
		g.Expect(f).To(HaveKeyWithValue("time", BeNumerically("==", at.UnixMilli())))
		g.Expect(f["tags"]).To(ContainElements("flux", "kustomize-controller", "kind: Kustomization", "name: apps",
			"namespace: flux-system", "severity: error", "revision: main@sha1:aaa", "cluster: prod"))
		g.Expect(r).To(HaveKeyWithValue("text", ContainSubstring("Resolved: Applied revision")))
		g.Expect(r["tags"]).To(ContainElements("resolved", "severity: info", "revision: main@sha1:bbb"))
	},
}, {
	typ: "incident.io", secrets: []string{"io-token"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base + "/v2/alert_events/http/01GW2G3V0S59R238FAHPDS1R66", Token: "io-token"}
	},
	check: func(g Gomega, fire, resolve, info recorded) {
		for _, r := range []recorded{fire, resolve, info} {
			g.Expect(r.Path).To(Equal("/v2/alert_events/http/01GW2G3V0S59R238FAHPDS1R66"))
			g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer io-token"))
		}
		f, r, i := jsonOf(g, fire.Body), jsonOf(g, resolve.Body), jsonOf(g, info.Body)
		g.Expect(f).To(HaveKeyWithValue("status", "firing"))
		g.Expect(f).To(HaveKeyWithValue("title", "Kustomization/apps.flux-system: health check failed"))
		g.Expect(f).To(HaveKeyWithValue("description", "health check failed\n(and 2 more like it)"))
		g.Expect(f).To(HaveKeyWithValue("deduplication_key", "kustomization/apps.flux-system"))
		g.Expect(f["metadata"]).To(And(HaveKeyWithValue("revision", "main@sha1:aaa"), HaveKeyWithValue("cluster", "prod"),
			HaveKeyWithValue("severity", "error"), HaveKeyWithValue("kind", "Kustomization"), Not(HaveKey("token"))))
		g.Expect(r).To(HaveKeyWithValue("status", "resolved"))
		g.Expect(r).To(HaveKeyWithValue("deduplication_key", f["deduplication_key"]), "the recovery resolves what the failure fired")
		g.Expect(r).To(HaveKeyWithValue("description", "Resolved: Applied revision"))
		g.Expect(i).To(HaveKeyWithValue("status", "firing"))
		g.Expect(i["metadata"]).To(HaveKeyWithValue("severity", "info"))
		g.Expect(i["deduplication_key"]).NotTo(Equal(f["deduplication_key"]), "an info event does not replace the failure")
	},
}, {
	typ: "otel", secrets: []string{"otel-token"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base, Token: "otel-token", Headers: map[string]string{"X-Scope-OrgID": "tenant-1"}}
	},
	check: func(g Gomega, fire, resolve, info recorded) {
		span := func(r recorded) (*tracepb.Span, string) {
			g.Expect(r.Path).To(Equal("/v1/traces"))
			g.Expect(r.Header.Get("Content-Type")).To(Equal("application/x-protobuf"))
			g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer otel-token"))
			g.Expect(r.Header.Get("X-Scope-OrgID")).To(Equal("tenant-1"))
			var req coltracepb.ExportTraceServiceRequest
			g.Expect(proto.UnmarshalOptions{}.Unmarshal(r.Body, &req)).To(Succeed())
			g.Expect(req.ProtoReflect().GetUnknown()).To(BeEmpty())
			g.Expect(req.ResourceSpans).To(HaveLen(1))
			rs := req.ResourceSpans[0]
			g.Expect(rs.ScopeSpans).To(HaveLen(1))
			g.Expect(rs.ScopeSpans[0].Spans).To(HaveLen(1))
			return rs.ScopeSpans[0].Spans[0], attrs(rs.Resource.Attributes)["service.name"]
		}
		f, service := span(fire)
		r, _ := span(resolve)
		i, _ := span(info)
		g.Expect(service).To(Equal("kustomize-controller"))
		g.Expect(f.Name).To(Equal("Kustomization/apps.flux-system"))
		g.Expect(f.TraceId).To(HaveLen(16))
		g.Expect(f.SpanId).To(HaveLen(8))
		g.Expect(f.StartTimeUnixNano).To(Equal(uint64(at.UnixNano())))
		g.Expect(f.Status.Code).To(Equal(tracepb.Status_STATUS_CODE_ERROR))
		g.Expect(f.Status.Message).To(Equal("health check failed\n(and 2 more like it)"))
		g.Expect(attrs(f.Attributes)).To(And(HaveKeyWithValue("event.revision", "main@sha1:aaa"), HaveKeyWithValue("event.cluster", "prod"),
			HaveKeyWithValue("event.reason", "HealthCheckFailed"), HaveKeyWithValue("k8s.namespace.name", "flux-system")))
		g.Expect(r.Status.Code).To(Equal(tracepb.Status_STATUS_CODE_OK))
		g.Expect(attrs(r.Attributes)).To(HaveKeyWithValue("event.message", "Resolved: Applied revision"))
		g.Expect(r.TraceId).To(Equal(i.TraceId), "the spans of one revision are one trace")
		g.Expect(r.TraceId).NotTo(Equal(f.TraceId))
		g.Expect(r.SpanId).NotTo(Equal(i.SpanId))
	},
}, {
	typ: "pagerduty", secrets: []string{"pd-routing-key"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base, Channel: "pd-routing-key"}
	},
	check: func(g Gomega, fire, resolve, info recorded) {
		f, r, i := jsonOf(g, fire.Body), jsonOf(g, resolve.Body), jsonOf(g, info.Body)
		g.Expect(fire.Path).To(Equal("/v2/enqueue"))
		g.Expect(f).To(HaveKeyWithValue("routing_key", "pd-routing-key"))
		g.Expect(f).To(HaveKeyWithValue("event_action", "trigger"))
		g.Expect(f).To(HaveKeyWithValue("dedup_key", "kustomization/apps.flux-system"))
		g.Expect(f["payload"]).To(And(
			HaveKeyWithValue("summary", "Kustomization/apps.flux-system: health check failed\n(and 2 more like it)"),
			HaveKeyWithValue("severity", "error"), HaveKeyWithValue("source", "kustomization/apps.flux-system"),
			HaveKeyWithValue("timestamp", at.UTC().Format(time.RFC3339)),
			HaveKeyWithValue("custom_details", HaveKeyWithValue("revision", "main@sha1:aaa"))))
		g.Expect(resolve.Path).To(Equal("/v2/enqueue"))
		g.Expect(r).To(HaveKeyWithValue("event_action", "resolve"))
		g.Expect(r).To(HaveKeyWithValue("dedup_key", f["dedup_key"]), "the resolve closes what the trigger opened")
		g.Expect(r).To(HaveKeyWithValue("routing_key", "pd-routing-key"))
		g.Expect(info.Path).To(Equal("/v2/change/enqueue"))
		g.Expect(i).NotTo(HaveKey("event_action"))
		g.Expect(i["payload"]).To(HaveKeyWithValue("summary", ContainSubstring("Reconciliation started")))
	},
}, {
	typ: "opsgenie", secrets: []string{"og-key"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base + "/v2/alerts", Token: "og-key"}
	},
	check: func(g Gomega, fire, resolve, info recorded) {
		for _, r := range []recorded{fire, resolve, info} {
			g.Expect(r.Header.Get("Authorization")).To(Equal("GenieKey og-key"))
		}
		f, r, i := jsonOf(g, fire.Body), jsonOf(g, resolve.Body), jsonOf(g, info.Body)
		g.Expect(fire.Path).To(Equal("/v2/alerts"))
		g.Expect(f).To(HaveKeyWithValue("alias", "kustomization:apps.flux-system"))
		g.Expect(f).To(HaveKeyWithValue("message", "Kustomization/apps.flux-system: health check failed"))
		g.Expect(f).To(HaveKeyWithValue("description", "health check failed\n(and 2 more like it)"))
		g.Expect(f["details"]).To(And(HaveKeyWithValue("revision", "main@sha1:aaa"), HaveKeyWithValue("cluster", "prod")))
		g.Expect(resolve.Path).To(Equal("/v2/alerts/" + f["alias"].(string) + "/close"))
		g.Expect(resolve.Query).To(Equal("identifierType=alias"))
		g.Expect(r).To(HaveKeyWithValue("note", "Resolved: Applied revision"))
		g.Expect(info.Path).To(Equal("/v2/alerts"))
		g.Expect(i).To(HaveKeyWithValue("priority", "P5"))
		g.Expect(i).NotTo(HaveKey("alias"))
	},
}, {
	typ: "datadog", secrets: []string{"dd-key"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base, Token: "dd-key"}
	},
	check: func(g Gomega, fire, resolve, info recorded) {
		for _, r := range []recorded{fire, resolve, info} {
			g.Expect(r.Path).To(Equal("/api/v1/events"))
			g.Expect(r.Header.Get("DD-API-KEY")).To(Equal("dd-key"))
		}
		f, r, i := jsonOf(g, fire.Body), jsonOf(g, resolve.Body), jsonOf(g, info.Body)
		g.Expect(f).To(HaveKeyWithValue("title", "Kustomization/apps.flux-system: HealthCheckFailed"))
		g.Expect(f).To(HaveKeyWithValue("text", "health check failed\n(and 2 more like it)"))
		g.Expect(f).To(HaveKeyWithValue("alert_type", "error"))
		g.Expect(f).To(HaveKeyWithValue("date_happened", BeNumerically("==", at.Unix())))
		g.Expect(f["tags"]).To(ContainElements("kind:Kustomization", "name:apps", "namespace:flux-system", "revision:main@sha1:aaa"))
		g.Expect(r).To(HaveKeyWithValue("alert_type", "success"))
		g.Expect(r).To(HaveKeyWithValue("text", "Resolved: Applied revision"))
		g.Expect(r).To(HaveKeyWithValue("aggregation_key", f["aggregation_key"]))
		g.Expect(i).To(HaveKeyWithValue("alert_type", "info"))
	},
}, {
	typ: "sentry", secrets: []string{"pubkey"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: strings.Replace(base, "https://", "https://pubkey@", 1) + "/prefix/42", Channel: "staging"}
	},
	check: func(g Gomega, fire, resolve, _ recorded) {
		event := func(r recorded) map[string]any {
			g.Expect(r.Path).To(Equal("/prefix/api/42/envelope/"))
			g.Expect(r.Header.Get("Content-Type")).To(Equal("application/x-sentry-envelope"))
			g.Expect(r.Header.Get("X-Sentry-Auth")).To(And(HavePrefix("Sentry sentry_version=7,"), ContainSubstring("sentry_key=pubkey")))
			lines := bytes.Split(bytes.TrimSuffix(r.Body, []byte("\n")), []byte("\n"))
			g.Expect(lines).To(HaveLen(3))
			header, item, ev := jsonOf(g, lines[0]), jsonOf(g, lines[1]), jsonOf(g, lines[2])
			g.Expect(item).To(And(HaveKeyWithValue("type", "event"), HaveKeyWithValue("length", BeNumerically("==", len(lines[2])))))
			g.Expect(ev).To(HaveKeyWithValue("event_id", MatchRegexp("^[0-9a-f]{32}$")))
			g.Expect(header).To(HaveKeyWithValue("event_id", ev["event_id"]))
			g.Expect(ev).To(HaveKeyWithValue("environment", "staging"))
			return ev
		}
		f, r := event(fire), event(resolve)
		g.Expect(f).To(HaveKeyWithValue("level", "error"))
		g.Expect(f["logentry"]).To(HaveKeyWithValue("formatted", ContainSubstring("health check failed\n(and 2 more like it)")))
		g.Expect(f["tags"]).To(And(HaveKeyWithValue("revision", "main@sha1:aaa"), HaveKeyWithValue("kind", "Kustomization")))
		g.Expect(r).To(HaveKeyWithValue("level", "info"))
		g.Expect(r["logentry"]).To(HaveKeyWithValue("formatted", ContainSubstring("Resolved: Applied revision")))
	},
}, {
	typ: "githubdispatch", secrets: []string{"gh-token"},
	cfg: func(base string) notify.Config {
		return notify.Config{AllowLoopback: true, Address: base + "/acme/app", Token: "gh-token"}
	},
	check: func(g Gomega, fire, resolve, _ recorded) {
		for _, r := range []recorded{fire, resolve} {
			g.Expect(r.Path).To(Equal("/api/v3/repos/acme/app/dispatches"))
			g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer gh-token"))
			g.Expect(r.Header.Get("Accept")).To(Equal("application/vnd.github+json"))
		}
		f, r := jsonOf(g, fire.Body), jsonOf(g, resolve.Body)
		g.Expect(f).To(HaveKeyWithValue("event_type", "Kustomization/apps.flux-system"))
		g.Expect(f["client_payload"]).To(And(
			HaveKeyWithValue("involvedObject", HaveKeyWithValue("name", "apps")),
			HaveKeyWithValue("reason", "HealthCheckFailed"),
			HaveKeyWithValue("message", "health check failed\n(and 2 more like it)"),
			HaveKeyWithValue("metadata", HaveKeyWithValue(revKey, "main@sha1:aaa"))))
		g.Expect(r["client_payload"]).To(HaveKeyWithValue("message", "Resolved: Applied revision"))
	},
}}

// attrs returns string attributes as a map.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}

// TestProviders posts a failure, its recovery and an info event to each
// type against a loopback HTTPS server, and checks the requests against
// what each service documents.
func TestProviders(t *testing.T) {
	g := NewWithT(t)
	g.Expect(providerCases).To(HaveLen(len(Types)), "every type has a case")
	for _, tc := range providerCases {
		t.Run(tc.typ, func(t *testing.T) {
			g := NewWithT(t)
			srv := newLoopback(t, func(int) int { return http.StatusAccepted }, false)
			cfg := tc.cfg(srv.URL)
			cfg.Type, cfg.TLS = tc.typ, srv.tlsConfig()
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			for _, m := range []notify.Message{failure, recovery, progress} {
				g.Expect(n.Post(context.Background(), m)).To(Succeed())
			}
			reqs := srv.requests()
			g.Expect(reqs).To(HaveLen(3))
			for _, r := range reqs {
				g.Expect(r.Method).To(Equal(http.MethodPost))
			}
			tc.check(g, reqs[0], reqs[1], reqs[2])
		})
	}
}

// TestFailedAnswers: a 429 or 500 answer is a retryable StatusError that
// does not show the token, even when the service quotes the request.
func TestFailedAnswers(t *testing.T) {
	srv := newLoopback(t, func(n int) int { return []int{http.StatusTooManyRequests, http.StatusInternalServerError}[n%2] }, true)
	for _, tc := range providerCases {
		t.Run(tc.typ, func(t *testing.T) {
			g := NewWithT(t)
			cfg := tc.cfg(srv.URL)
			cfg.Type, cfg.TLS = tc.typ, srv.tlsConfig()
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			err = n.Post(context.Background(), failure)
			var se *notify.StatusError
			g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
			g.Expect(se.Code).To(BeElementOf(http.StatusTooManyRequests, http.StatusInternalServerError))
			g.Expect(se.Retryable()).To(BeTrue())
			g.Expect(se.Answer).To(ContainSubstring("***"), "the answer quoted a secret, which was removed")
			for _, secret := range tc.secrets {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			}
		})
	}
}

// TestNewRefuses: a Config that lacks what its type needs, or whose address
// is link-local, is refused with an error that says what is missing and
// does not show the token.
func TestNewRefuses(t *testing.T) {
	const token = "s3cr3t-token"
	tests := []struct {
		cfg     notify.Config
		wantErr string
	}{
		{notify.Config{AllowLoopback: true, Type: "slack", Address: "https://x"}, `unknown provider type "slack"`},
		{notify.Config{AllowLoopback: true, Type: "alertmanager", Token: token}, "an address is required"},
		{notify.Config{AllowLoopback: true, Type: "grafana", Address: "http://169.254.169.254/api/annotations", Token: token}, "link-local"},
		{notify.Config{AllowLoopback: true, Type: "alertmanager", Address: "http://[fe80::1]:9093/api/v2/alerts", Token: token}, "link-local"},
		{notify.Config{AllowLoopback: true, Type: "opsgenie", Token: token, Address: "ftp://opsgenie"}, "scheme must be https or http"},
		{notify.Config{AllowLoopback: true, Type: "opsgenie"}, "'token' is required"},
		{notify.Config{AllowLoopback: true, Type: "datadog", Address: "https://api.datadoghq.eu"}, "'token' is required"},
		{notify.Config{AllowLoopback: true, Type: "githubdispatch", Address: "https://github.com/acme/app"}, "'token' is required"},
		{notify.Config{AllowLoopback: true, Type: "incident.io", Address: "https://api.incident.io/v2/alert_events/http/01GW"}, "'token' is required"},
		{notify.Config{AllowLoopback: true, Type: "incident.io", Token: token}, "an address is required"},
		{notify.Config{AllowLoopback: true, Type: "githubdispatch", Address: "https://github.com/acme", Token: token}, "must be a repository"},
		{notify.Config{AllowLoopback: true, Type: "pagerduty", Address: "https://events.pagerduty.com"}, "routing (integration) key is required"},
		{notify.Config{AllowLoopback: true, Type: "sentry", Address: "https://sentry.example.com/42"}, "must be a Sentry DSN"},
		{notify.Config{AllowLoopback: true, Type: "sentry", Address: "https://" + token + "@sentry.example.com/"}, "must be a Sentry DSN"},
		{notify.Config{AllowLoopback: true, Type: "grafana", Address: "https://user:" + token + "@169.254.169.254/api"}, "link-local"},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.Type+" "+tt.wantErr, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(tt.cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(token))
		})
	}
	_, err := New(notify.Config{AllowLoopback: true, Type: "grafana", Address: "http://169.254.169.254/api/annotations", AllowLinkLocal: true})
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "link-local addresses are allowed when the flag allows them")
}

// TestEndpoints: the default addresses, and the forms of address each type
// accepts, give the URLs the services document.
func TestEndpoints(t *testing.T) {
	tests := []struct {
		cfg     notify.Config
		m       notify.Message
		wantURL string
	}{
		{notify.Config{AllowLoopback: true, Type: "pagerduty", Channel: "k"}, failure, "https://events.pagerduty.com/v2/enqueue"},
		{notify.Config{AllowLoopback: true, Type: "pagerduty", Channel: "k"}, progress, "https://events.pagerduty.com/v2/change/enqueue"},
		{notify.Config{AllowLoopback: true, Type: "pagerduty", Token: "k", Address: "https://events.eu.pagerduty.com/v2/enqueue"}, progress,
			"https://events.eu.pagerduty.com/v2/change/enqueue"},
		{notify.Config{AllowLoopback: true, Type: "opsgenie", Token: "k"}, recovery, "https://api.opsgenie.com/v2/alerts/kustomization:apps.flux-system/close?identifierType=alias"},
		{notify.Config{AllowLoopback: true, Type: "datadog", Token: "k"}, failure, "https://api.datadoghq.com/api/v1/events"},
		{notify.Config{AllowLoopback: true, Type: "datadog", Token: "k", Address: "https://api.datadoghq.eu/api/v1/events"}, failure, "https://api.datadoghq.eu/api/v1/events"},
		{notify.Config{AllowLoopback: true, Type: "githubdispatch", Token: "k", Address: "https://github.com/acme/app.git"}, failure, "https://api.github.com/repos/acme/app/dispatches"},
		{notify.Config{AllowLoopback: true, Type: "githubdispatch", Token: "k", Address: "https://ghe.example.com/acme/app/"}, failure, "https://ghe.example.com/api/v3/repos/acme/app/dispatches"},
		{notify.Config{AllowLoopback: true, Type: "sentry", Address: "https://pub:sec@o1.ingest.sentry.io/7"}, failure, "https://o1.ingest.sentry.io/api/7/envelope/"},
		{notify.Config{AllowLoopback: true, Type: "otel", Address: "http://collector:4318/"}, failure, "http://collector:4318/v1/traces"},
		{notify.Config{AllowLoopback: true, Type: "otel", Address: "https://otlp.example.com/otlp/v1/traces"}, failure, "https://otlp.example.com/otlp/v1/traces"},
	}
	for _, tt := range tests {
		t.Run(tt.wantURL, func(t *testing.T) {
			g := NewWithT(t)
			target, err := builders[tt.cfg.Type](tt.cfg)
			g.Expect(err).NotTo(HaveOccurred())
			req, err := target.request(tt.m)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(req.URL).To(Equal(tt.wantURL))
		})
	}
}

// TestBoundedKey: long identities are cut to the service's limit and stay
// distinct.
func TestBoundedKey(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("a", 300)
	g.Expect(boundedKey("short", 255)).To(Equal("short"))
	g.Expect(boundedKey(long+"1", 255)).To(HaveLen(255))
	g.Expect(boundedKey(long+"1", 255)).NotTo(Equal(boundedKey(long+"2", 255)))
	g.Expect(truncate("héllo world", 5)).To(Equal("héll…"))
}
