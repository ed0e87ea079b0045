package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// badPayload returns an ErrBadPayload with a reason that must not quote the
// body.
func badPayload(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadPayload}, args...)...)
}

// parseGeneric accepts any body; a JSON object is kept as the payload.
func parseGeneric(_ http.Header, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		payload = nil
	}
	return Result{Payload: payload}, nil
}

// parseGitHub reads X-GitHub-Event and the payload, sent as JSON or as the
// "payload" field of a form (GitHub's application/x-www-form-urlencoded
// content type). A ping is skipped before the payload is read.
func parseGitHub(h http.Header, body []byte) (Result, error) {
	event, err := requiredHeader(h, "X-GitHub-Event")
	if err != nil {
		return Result{}, err
	}
	if event == "ping" {
		return Result{Event: event, Skip: true, Reason: "GitHub ping"}, nil
	}
	if mediaType, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mediaType == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			return Result{}, badPayload("the form body has no payload field")
		}
		body = []byte(form.Get("payload"))
	}
	return eventWithObject(event, body)
}

// parseGitLab reads X-Gitlab-Event and the JSON payload.
func parseGitLab(h http.Header, body []byte) (Result, error) {
	event, err := requiredHeader(h, "X-Gitlab-Event")
	if err != nil {
		return Result{}, err
	}
	return eventWithObject(event, body)
}

// parseBitbucket reads Bitbucket Server's X-Event-Key and the JSON payload;
// the "Test connection" ping is skipped.
func parseBitbucket(h http.Header, body []byte) (Result, error) {
	event, err := requiredHeader(h, "X-Event-Key")
	if err != nil {
		return Result{}, err
	}
	if event == "diagnostics:ping" {
		return Result{Event: event, Skip: true, Reason: "Bitbucket Server ping"}, nil
	}
	return eventWithObject(event, body)
}

// parseHarbor reads a Harbor payload, whose "type" is the event
// (PUSH_ARTIFACT, or harbor.artifact.pushed in the CloudEvents format).
func parseHarbor(_ http.Header, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		return Result{}, err
	}
	event, ok := stringAt(payload, "type")
	if !ok {
		return Result{}, badPayload("not a Harbor payload: no \"type\"")
	}
	return Result{Event: event, Payload: payload}, nil
}

// parseDockerHub checks the shape of a Docker Hub push payload: a
// "push_data" object and a "repository" with a "repo_name".
func parseDockerHub(_ http.Header, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		return Result{}, err
	}
	if _, ok := objectAt(payload, "push_data"); !ok {
		return Result{}, badPayload("not a Docker Hub payload: no \"push_data\" object")
	}
	if _, ok := stringAt(payload, "repository", "repo_name"); !ok {
		return Result{}, badPayload("not a Docker Hub payload: no \"repository.repo_name\"")
	}
	return Result{Event: "push", Payload: payload}, nil
}

// parseQuay checks the shape of a Quay "Repository Push" notification: a
// "docker_url" and "updated_tags" (a list, or a tag-to-digest object in
// older Quay versions).
func parseQuay(_ http.Header, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		return Result{}, err
	}
	if _, ok := stringAt(payload, "docker_url"); !ok {
		return Result{}, badPayload("not a Quay push payload: no \"docker_url\"")
	}
	switch payload["updated_tags"].(type) {
	case []any, map[string]any:
	default:
		return Result{}, badPayload("not a Quay push payload: no \"updated_tags\"")
	}
	return Result{Event: "push", Payload: payload}, nil
}

// parseNexus checks a Nexus Repository payload (an "action") and reads the
// event from X-Nexus-Webhook-Id (e.g. rm:repository:component).
func parseNexus(h http.Header, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		return Result{}, err
	}
	if _, ok := stringAt(payload, "action"); !ok {
		return Result{}, badPayload("not a Nexus payload: no \"action\"")
	}
	return Result{Event: strings.TrimSpace(h.Get("X-Nexus-Webhook-Id")), Payload: payload}, nil
}

// parseACR checks an Azure Container Registry payload: an "action" (the
// event) and, except for a ping, a "target.repository".
func parseACR(_ http.Header, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		return Result{}, err
	}
	action, ok := stringAt(payload, "action")
	if !ok {
		return Result{}, badPayload("not an ACR payload: no \"action\"")
	}
	if action == "ping" {
		return Result{Event: action, Skip: true, Reason: "ACR ping", Payload: payload}, nil
	}
	if _, ok := stringAt(payload, "target", "repository"); !ok {
		return Result{}, badPayload("not an ACR payload: no \"target.repository\"")
	}
	return Result{Event: action, Payload: payload}, nil
}

// parseCDEvents reads a CDEvent sent as a CloudEvent: in binary mode the
// Ce-Type header is the type and the body the CDEvent; in structured mode
// (no Ce-Type) the body is the CloudEvent, with the CDEvent in "data". The
// CDEvent must have a context.type equal to the CloudEvent type and a
// subject.
func parseCDEvents(h http.Header, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		return Result{}, err
	}
	ceType := strings.TrimSpace(h.Get("Ce-Type"))
	cdevent := payload
	if ceType == "" {
		data, isObject := objectAt(payload, "data")
		structuredType, hasType := stringAt(payload, "type")
		if !isObject || !hasType {
			return Result{}, badPayload("missing Ce-Type header, and the body is not a structured CloudEvent")
		}
		ceType, cdevent = structuredType, data
	}
	contextType, ok := stringAt(cdevent, "context", "type")
	if !ok || !strings.HasPrefix(contextType, "dev.cdevents.") {
		return Result{}, badPayload("not a CDEvent: context.type must start with dev.cdevents.")
	}
	if _, ok := objectAt(cdevent, "subject"); !ok {
		return Result{}, badPayload("not a CDEvent: no \"subject\" object")
	}
	if contextType != ceType {
		return Result{}, badPayload("the CloudEvent type does not match the CDEvent's context.type")
	}
	return Result{Event: ceType, Payload: cdevent}, nil
}

// requiredHeader returns a header's value, an ErrBadPayload when it is
// missing.
func requiredHeader(h http.Header, name string) (string, error) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return "", badPayload("missing %s header", name)
	}
	return v, nil
}

// eventWithObject returns a Result for event with body as its JSON payload.
func eventWithObject(event string, body []byte) (Result, error) {
	payload, err := decodeObject(body)
	if err != nil {
		return Result{}, err
	}
	return Result{Event: event, Payload: payload}, nil
}

// decodeObject parses body as exactly one JSON object. The error gives the
// offset of a syntax error, never the body.
func decodeObject(body []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badPayload("the body is empty")
	}
	var obj map[string]any
	err := json.Unmarshal(body, &obj)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return nil, badPayload("the body is not valid JSON (syntax error at byte %d)", syntax.Offset)
	case err != nil || obj == nil:
		return nil, badPayload("the body is not a JSON object")
	}
	return obj, nil
}

// lookup follows path through nested JSON objects.
func lookup(obj map[string]any, path ...string) (any, bool) {
	var v any = obj
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// stringAt returns the non-empty string at path.
func stringAt(obj map[string]any, path ...string) (string, bool) {
	v, _ := lookup(obj, path...)
	s, ok := v.(string)
	return s, ok && s != ""
}

// objectAt returns the JSON object at path.
func objectAt(obj map[string]any, path ...string) (map[string]any, bool) {
	v, _ := lookup(obj, path...)
	m, ok := v.(map[string]any)
	return m, ok
}
