package incident

import (
	"crypto/sha256"
	"fmt"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/windlass-dev/windlass/internal/notify"
)

// OpenTelemetry, OTLP/HTTP (opentelemetry.io/docs/specs/otlp, "OTLP/HTTP"):
// POST an ExportTraceServiceRequest, protobuf-encoded
// ("Content-Type: application/x-protobuf", the encoding every OTLP/HTTP
// receiver takes), to the traces endpoint, by default <base>/v1/traces;
// a 2xx answer means the spans were taken.
//
// Each event is one span, as the reference sends them: its name is the
// object ("Kustomization/apps.flux-system"), it starts and ends when the
// event happened, its status is Error (with the text) for a failure and
// Ok otherwise, and its attributes are the event's reason, severity,
// message, revision and metadata. Spans of the same revision share a trace
// (the trace id is a hash of the revision), so that a trace shows what
// each controller did with one commit or artifact; an event without a
// revision is a trace of its own. The resource's service.name is the
// reporting controller.
//
// The address is the collector's OTLP/HTTP endpoint, e.g.
// http://otel-collector:4318 (/v1/traces is added unless the path ends
// with it); a token in the Secret is sent as a bearer token, a username
// and password as basic auth, and the Secret's headers are added.

// otlpTracesPath is the default path of the traces endpoint.
const otlpTracesPath = "/v1/traces"

// otlpScope names the instrumentation scope of the spans.
const otlpScope = "windlass.notification"

func newOTel(cfg notify.Config) (*target, error) {
	u, err := address(cfg, "")
	if err != nil {
		return nil, err
	}
	endpoint := withPath(u, otlpTracesPath)
	headers, secrets := authorization(cfg)
	return &target{secrets: secrets, request: func(m notify.Message) (notify.Request, error) {
		body, err := proto.Marshal(otlpRequest(m))
		if err != nil {
			return notify.Request{}, fmt.Errorf("encoding the span: %w", err)
		}
		return notify.Request{URL: endpoint, Headers: headers, Body: body, ContentType: "application/x-protobuf"}, nil
	}}, nil
}

// otlpRequest is the export request of m's span.
func otlpRequest(m notify.Message) *coltracepb.ExportTraceServiceRequest {
	service := m.ReportingController
	if service == "" {
		service = "windlass"
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{stringAttr("service.name", service)}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: otlpScope}, Spans: []*tracepb.Span{otlpSpan(m)}}},
	}}}
}

// otlpSpan is the span of m.
func otlpSpan(m notify.Message) *tracepb.Span {
	at := uint64(eventTime(m).UnixNano()) //nolint:gosec // event times are after 1970
	status := &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	if notify.IsError(m) {
		status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: notify.Text(m)}
	}
	o := m.InvolvedObject
	attrs := []*commonpb.KeyValue{
		stringAttr("k8s.object.kind", o.Kind), stringAttr("k8s.object.name", o.Name), stringAttr("k8s.namespace.name", o.Namespace),
		stringAttr("event.severity", severity(m)), stringAttr("event.message", notify.Text(m)),
	}
	for _, kv := range sortedDetails(m) {
		attrs = append(attrs, stringAttr("event."+kv[0], kv[1]))
	}
	return &tracepb.Span{
		TraceId: traceID(m), SpanId: spanID(m), Name: objectName(m), Kind: tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: at, EndTimeUnixNano: at, Attributes: attrs, Status: status,
	}
}

// sortedDetails is details(m) sorted by key, for a stable span.
func sortedDetails(m notify.Message) [][2]string {
	d := details(m)
	out := [][2]string{{"reason", d["reason"]}}
	if rev, ok := d["revision"]; ok {
		out = append(out, [2]string{"revision", rev})
	}
	for _, kv := range metadata(m) {
		if kv[0] != "reason" && kv[0] != "revision" {
			out = append(out, kv)
		}
	}
	return out
}

// traceID is the trace of m: a hash of its revision, so that the spans of
// one revision are one trace, or of the span itself without one.
func traceID(m notify.Message) []byte {
	key := "revision\x00" + revision(m)
	if revision(m) == "" {
		key = "event\x00" + string(spanID(m))
	}
	sum := sha256.Sum256([]byte(key))
	return sum[:16]
}

// spanID identifies m's span: a hash of the object, the time and the
// reason, so that a message sent again is the same span.
func spanID(m notify.Message) []byte {
	sum := sha256.Sum256([]byte(notify.ObjectID(m) + "\x00" + eventTime(m).UTC().String() + "\x00" + m.Reason + "\x00" + m.Message))
	return sum[:8]
}

func stringAttr(key, value string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: value}}}
}
