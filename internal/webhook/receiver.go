// Package webhook verifies and reads the webhooks that a Receiver
// (notification.toolkit.fluxcd.io/v1) accepts, without any controller or
// server plumbing: Verify takes one HTTP request and the Receiver's type,
// events and token, and says whether the request is authentic and what it
// asks for.
//
// # Order of checks
//
// Verify always works in this order, so that nothing an attacker sends is
// parsed before it is known to come from someone holding the token:
//
//  1. the Receiver must have a token (every type depends on it, if only
//     through the secret webhook path);
//  2. the body is read up to MaxBodyBytes; a larger one (by Content-Length or
//     by what is actually sent) is refused with ErrTooLarge after reading at
//     most MaxBodyBytes+1 bytes;
//  3. the signature or token is checked with constant-time comparisons
//     (ErrUnauthorized);
//  4. only then are the event header and the payload parsed (ErrBadPayload).
//
// # Types
//
//	type          authentication                                 event
//	generic       the secret path only                           none
//	generic-hmac  X-Signature: <sha1|sha256|sha512>=<hex HMAC>   none
//	              (of "<timestamp>.<body>" with X-Signature-Timestamp)
//	github        X-Hub-Signature-256: sha256=<hex HMAC>         X-GitHub-Event
//	              (or the legacy X-Hub-Signature: sha1=<hex>)
//	gitlab        X-Gitlab-Token equal to the token              X-Gitlab-Event
//	bitbucket     X-Hub-Signature: sha256=<hex HMAC>             X-Event-Key
//	harbor        Authorization equal to the token               payload "type"
//	dockerhub     the secret path only                           "push"
//	quay          the secret path only                           "push"
//	nexus         X-Nexus-Webhook-Signature: <hex HMAC-SHA1>     X-Nexus-Webhook-Id
//	acr           the secret path only                           payload "action"
//	cdevents      the secret path only                           Ce-Type
//
// Every HMAC is computed over the raw body with the token as key. For the
// types authenticated by the path only, the caller's routing by WebhookPath
// is the authentication: the path is derived from the token and cannot be
// guessed without it.
//
// Spec.Events filters only the types whose reference documentation says
// they filter (github, gitlab, bitbucket, cdevents; see FiltersEvents), so a
// manifest written for the reference behaves the same here; the event of
// other types is still reported in Result.Event. Pings (GitHub "ping",
// Bitbucket Server "diagnostics:ping", an ACR "ping" action) are valid
// requests that never trigger anything: Result.Skip is set.
//
// Errors wrap one of ErrUnauthorized, ErrTooLarge, ErrBadPayload or
// ErrUnsupportedType (HTTPStatus maps them to a status code) and never hold
// the token, an expected signature or the body.
package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// MaxBodyBytes bounds the body of a webhook request: 1 MiB, far above the
// push payloads of the supported services (a GitHub push lists at most 20
// commits). A larger request is refused with ErrTooLarge before anything in
// it is parsed; the objects it would have reconciled still are at their
// next interval.
const MaxBodyBytes = 1 << 20

// The Receiver types.
const (
	TypeGeneric     = "generic"
	TypeGenericHMAC = "generic-hmac"
	TypeGitHub      = "github"
	TypeGitLab      = "gitlab"
	TypeBitbucket   = "bitbucket"
	TypeHarbor      = "harbor"
	TypeDockerHub   = "dockerhub"
	TypeQuay        = "quay"
	TypeNexus       = "nexus"
	TypeACR         = "acr"
	TypeCDEvents    = "cdevents"
)

// The kinds of error Verify returns; match them with errors.Is.
var (
	// ErrUnauthorized: the signature or token is missing or wrong, or the
	// Receiver has no token (HTTP 401).
	ErrUnauthorized = errors.New("unauthorized webhook request")
	// ErrTooLarge: the body is larger than MaxBodyBytes (HTTP 413).
	ErrTooLarge = errors.New("webhook request body too large")
	// ErrBadPayload: the request is authentic but its event header or
	// payload is missing or not of the shape the service sends (HTTP 400).
	ErrBadPayload = errors.New("bad webhook payload")
	// ErrUnsupportedType: the Receiver's type is not one this package knows
	// (HTTP 500: the Receiver, not the request, is wrong).
	ErrUnsupportedType = errors.New("unsupported receiver type")
)

// Spec is what Verify needs of a Receiver.
type Spec struct {
	// Type is the Receiver's spec.type.
	Type string
	// Events is the Receiver's spec.events; empty accepts every event.
	Events []string
	// Token is the "token" of the Receiver's secretRef.
	Token string
}

// Result is what an authentic request says.
type Result struct {
	// Event is the event name the service gave, e.g. "push" (GitHub),
	// "Push Hook" (GitLab), "repo:refs_changed" (Bitbucket Server),
	// "PUSH_ARTIFACT" (Harbor); empty for the generic types.
	Event string
	// Skip is set when the request is valid but must not trigger anything:
	// a ping, or an event not in Spec.Events.
	Skip bool
	// Reason says why Skip is set, for logs.
	Reason string
	// Payload is the JSON body when it is a JSON object (for a CDEvents
	// structured-mode request, the CDEvent inside it), for a resourceFilter's
	// `req`; nil otherwise.
	Payload map[string]any
	// SignedAt is the time a timed generic-hmac request was signed at (see
	// TimestampHeader); zero for a request signed without a time.
	SignedAt time.Time

	// signature identifies a timed request, for a ReplayGuard.
	signature string
}

// kind is how one Receiver type authenticates and reads a request.
type kind struct {
	// auth checks the signature or token; nil for path-only types.
	auth func(h http.Header, body []byte, token string) error
	// parse reads the event and payload of an authentic request.
	parse func(h http.Header, body []byte) (Result, error)
	// filters tells whether Spec.Events applies.
	filters bool
	// timed tells whether the signature may cover a TimestampHeader.
	timed bool
}

var kinds = map[string]kind{
	TypeGeneric:     {parse: parseGeneric},
	TypeGenericHMAC: {auth: authGenericHMAC, parse: parseGeneric, timed: true},
	TypeGitHub:      {auth: authGitHub, parse: parseGitHub, filters: true},
	TypeGitLab:      {auth: authGitLab, parse: parseGitLab, filters: true},
	TypeBitbucket:   {auth: authBitbucket, parse: parseBitbucket, filters: true},
	TypeHarbor:      {auth: authHarbor, parse: parseHarbor},
	TypeDockerHub:   {parse: parseDockerHub},
	TypeQuay:        {parse: parseQuay},
	TypeNexus:       {auth: authNexus, parse: parseNexus},
	TypeACR:         {parse: parseACR},
	TypeCDEvents:    {parse: parseCDEvents, filters: true},
}

// Types returns the supported Receiver types, sorted.
func Types() []string {
	types := make([]string, 0, len(kinds))
	for t := range kinds {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}

// FiltersEvents tells whether Spec.Events applies to a Receiver type; for the
// other types it is ignored, as in the reference.
func FiltersEvents(receiverType string) bool {
	return kinds[receiverType].filters
}

// WebhookPath returns the path a Receiver is served on:
// "/hook/" + hex(sha256(token + name + namespace)).
func WebhookPath(token, name, namespace string) string {
	sum := sha256.Sum256([]byte(token + name + namespace))
	return "/hook/" + hex.EncodeToString(sum[:])
}

// Verify reads the request's body (at most MaxBodyBytes), checks its
// signature or token for spec.Type, then parses its event and payload. See
// the package documentation for the order of checks and the errors.
func Verify(r *http.Request, spec Spec) (Result, error) {
	k, ok := kinds[spec.Type]
	if !ok {
		return Result{}, fmt.Errorf("%w %q (supported: %s)", ErrUnsupportedType, spec.Type, strings.Join(Types(), ", "))
	}
	if spec.Token == "" {
		return Result{}, fmt.Errorf("%w: the receiver has no token", ErrUnauthorized)
	}
	body, err := readBody(r)
	if err != nil {
		return Result{}, err
	}
	if k.auth != nil {
		if err := k.auth(r.Header, body, spec.Token); err != nil {
			return Result{}, err
		}
	}
	res, err := k.parse(r.Header, body)
	if err != nil {
		return Result{}, err
	}
	if k.timed {
		res.SignedAt, res.signature = signedAt(r.Header)
	}
	if !res.Skip && k.filters && !eventAllowed(res.Event, spec.Events) {
		res.Skip = true
		res.Reason = fmt.Sprintf("event %q is not in spec.events", res.Event)
	}
	return res, nil
}

// signedAt returns the time and the signature of a timed request, whose
// signature is known to be good; zero values for an untimed one.
func signedAt(h http.Header) (time.Time, string) {
	ts := h.Get(TimestampHeader)
	if ts == "" {
		return time.Time{}, ""
	}
	at, err := parseTimestamp(ts)
	if err != nil {
		return time.Time{}, ""
	}
	return at, ts + "/" + strings.ToLower(strings.TrimSpace(h.Get("X-Signature")))
}

// readBody reads the body, refusing one over MaxBodyBytes: by its declared
// length without reading it, or after reading MaxBodyBytes+1 bytes.
func readBody(r *http.Request) ([]byte, error) {
	tooLarge := fmt.Errorf("%w: the limit is %d bytes", ErrTooLarge, MaxBodyBytes)
	if r.ContentLength > MaxBodyBytes {
		return nil, tooLarge
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes):
		return nil, tooLarge
	case err != nil:
		return nil, fmt.Errorf("%w: reading the body: %v", ErrBadPayload, err)
	case len(body) > MaxBodyBytes:
		return nil, tooLarge
	}
	return body, nil
}

// eventAllowed tells whether event is in events (case-insensitively); an
// empty list allows every event.
func eventAllowed(event string, events []string) bool {
	if len(events) == 0 {
		return true
	}
	for _, e := range events {
		if strings.EqualFold(strings.TrimSpace(e), event) {
			return true
		}
	}
	return false
}

// HTTPStatus returns the status code to answer a request with, given the
// error Verify or a ReplayGuard returned: 200 for nil, 401, 413, 400, 429
// or 500 for the kinds of error, 500 for anything else.
func HTTPStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBadPayload):
		return http.StatusBadRequest
	case errors.Is(err, ErrBusy):
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}
