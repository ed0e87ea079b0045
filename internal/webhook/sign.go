package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Nexus signs with HMAC-SHA1
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultEvents are the events NewRequest sends for the types whose event
// is a header, when the Receiver lists no event: a push, as each service
// names it.
var DefaultEvents = map[string]string{
	TypeGitHub:    "push",
	TypeGitLab:    "Push Hook",
	TypeBitbucket: "repo:refs_changed",
	TypeNexus:     "rm:repository:component",
	TypeCDEvents:  "dev.cdevents.artifact.published.0.1.1",
}

// NewRequest returns a POST to url (the webhook server's address followed
// by the Receiver's webhook path) that a Receiver of spec accepts: it
// carries body, or when body is empty a sample push payload of the
// service, with the headers, event name and signature or token the
// service would send. The event is the first of spec.Events, or the
// type's entry of DefaultEvents. It is what `windlass trigger receiver`
// sends, and what tests send to prove a Receiver works.
func NewRequest(ctx context.Context, url string, spec Spec, body []byte) (*http.Request, error) {
	if _, ok := kinds[spec.Type]; !ok {
		return nil, fmt.Errorf("%w %q (supported: %s)", ErrUnsupportedType, spec.Type, strings.Join(Types(), ", "))
	}
	event := DefaultEvents[spec.Type]
	if len(spec.Events) > 0 {
		event = strings.TrimSpace(spec.Events[0])
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = SamplePayload(spec.Type, event)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "windlass-trigger")
	setServiceHeaders(req.Header, spec.Type, event, spec.Token, body)
	return req, nil
}

// setServiceHeaders sets the headers a service sends with a webhook of
// event: its event header and its signature or token.
func setServiceHeaders(h http.Header, receiverType, event, token string, body []byte) {
	switch receiverType {
	case TypeGenericHMAC:
		timestamp := strconv.FormatInt(time.Now().Unix(), 10)
		h.Set(TimestampHeader, timestamp)
		h.Set("X-Signature", "sha256="+hexHMAC(sha256.New, token, timedMessage(timestamp, body)))
	case TypeGitHub:
		h.Set("X-GitHub-Event", event)
		h.Set("X-GitHub-Delivery", randomID())
		h.Set("X-Hub-Signature-256", "sha256="+hexHMAC(sha256.New, token, body))
	case TypeGitLab:
		h.Set("X-Gitlab-Event", event)
		h.Set("X-Gitlab-Token", token)
	case TypeBitbucket:
		h.Set("X-Event-Key", event)
		h.Set("X-Request-Id", randomID())
		h.Set("X-Hub-Signature", "sha256="+hexHMAC(sha256.New, token, body))
	case TypeHarbor:
		h.Set("Authorization", token)
	case TypeNexus:
		h.Set("X-Nexus-Webhook-Id", event)
		h.Set("X-Nexus-Webhook-Delivery", randomID())
		h.Set("X-Nexus-Webhook-Signature", hexHMAC(sha1.New, token, body))
	case TypeCDEvents:
		setCloudEventHeaders(h, body)
	}
}

// setCloudEventHeaders sends a CDEvent in the CloudEvents binary mode (the
// Ce-* headers carry the attributes), unless body is a structured-mode
// CloudEvent already (a "type" and a "data" object).
func setCloudEventHeaders(h http.Header, body []byte) {
	var envelope struct {
		Type    string          `json:"type"`
		Data    json.RawMessage `json:"data"`
		Context struct {
			Type   string `json:"type"`
			ID     string `json:"id"`
			Source string `json:"source"`
		} `json:"context"`
	}
	if json.Unmarshal(body, &envelope) != nil {
		return
	}
	if envelope.Type != "" && len(envelope.Data) > 0 {
		h.Set("Content-Type", "application/cloudevents+json")
		return
	}
	id, source := envelope.Context.ID, envelope.Context.Source
	if id == "" {
		id = randomID()
	}
	if source == "" {
		source = "windlass-trigger"
	}
	h.Set("Ce-Specversion", "1.0")
	h.Set("Ce-Type", envelope.Context.Type)
	h.Set("Ce-Id", id)
	h.Set("Ce-Source", source)
}

// SamplePayload returns a push payload of the shape the service of a
// Receiver type sends, for event (the CDEvent type, for cdevents).
func SamplePayload(receiverType, event string) []byte {
	now := time.Now().UTC().Format(time.RFC3339)
	var payload any
	switch receiverType {
	case TypeGitHub:
		payload = map[string]any{"ref": "refs/heads/main", "before": zeroSHA, "after": zeroSHA,
			"repository": map[string]any{"name": "app", "full_name": "org/app"},
			"pusher":     map[string]any{"name": "windlass-trigger"}}
	case TypeGitLab:
		payload = map[string]any{"object_kind": "push", "event_name": "push", "ref": "refs/heads/main",
			"project": map[string]any{"name": "app", "path_with_namespace": "org/app"}}
	case TypeBitbucket:
		payload = map[string]any{"eventKey": event, "date": now,
			"repository": map[string]any{"slug": "app", "project": map[string]any{"key": "ORG"}},
			"changes":    []any{map[string]any{"ref": map[string]any{"id": "refs/heads/main"}, "toHash": zeroSHA, "type": "UPDATE"}}}
	case TypeHarbor:
		payload = map[string]any{"type": "PUSH_ARTIFACT", "occur_at": time.Now().Unix(), "operator": "windlass-trigger",
			"event_data": map[string]any{
				"resources":  []any{map[string]any{"tag": "latest", "resource_url": "harbor.example.com/library/app:latest"}},
				"repository": map[string]any{"name": "app", "namespace": "library", "repo_full_name": "library/app"}}}
	case TypeDockerHub:
		payload = map[string]any{"push_data": map[string]any{"tag": "latest", "pusher": "windlass-trigger", "pushed_at": time.Now().Unix()},
			"repository": map[string]any{"repo_name": "org/app", "name": "app", "namespace": "org"}}
	case TypeQuay:
		payload = map[string]any{"repository": "org/app", "namespace": "org", "name": "app",
			"docker_url": "quay.io/org/app", "homepage": "https://quay.io/repository/org/app", "updated_tags": []any{"latest"}}
	case TypeNexus:
		payload = map[string]any{"timestamp": now, "initiator": "windlass-trigger", "repositoryName": "docker-hosted",
			"action": "CREATED", "component": map[string]any{"format": "docker", "name": "app", "version": "latest"}}
	case TypeACR:
		payload = map[string]any{"id": randomID(), "timestamp": now, "action": "push",
			"target":  map[string]any{"repository": "app", "tag": "latest", "mediaType": "application/vnd.oci.image.manifest.v1+json"},
			"request": map[string]any{"host": "example.azurecr.io", "method": "PUT"}}
	case TypeCDEvents:
		payload = map[string]any{
			"context": map[string]any{"version": "0.4.1", "id": randomID(), "source": "windlass-trigger", "type": event, "timestamp": now},
			"subject": map[string]any{"id": "pkg:oci/app", "content": map[string]any{}}}
	default:
		payload = map[string]any{"source": "windlass-trigger", "timestamp": now}
	}
	body, _ := json.Marshal(payload) // maps of strings, numbers and lists always marshal
	return body
}

// zeroSHA stands for the commits of a sample push.
const zeroSHA = "0000000000000000000000000000000000000000"

// hexHMAC returns the hex HMAC of body keyed with token.
func hexHMAC(newHash func() hash.Hash, token string, body []byte) string {
	mac := hmac.New(newHash, []byte(token))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// randomID returns a random delivery or event id.
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
