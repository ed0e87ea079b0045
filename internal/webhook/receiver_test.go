package webhook

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // the services sign with HMAC-SHA1
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestVerifyEachService sends, for every Receiver type and over real HTTP, a
// request as its service sends it, then forged, unsigned, tampered,
// malformed and filtered variants of it.
func TestVerifyEachService(t *testing.T) {
	for _, svc := range services {
		body := []byte(svc.body)
		t.Run(svc.typ+"/valid", func(t *testing.T) {
			g := NewWithT(t)
			spec := Spec{Type: svc.typ, Token: testToken}
			if svc.filters {
				// Events match whatever their case.
				spec.Events = []string{"something-else", strings.ToUpper(svc.event)}
			}
			got, status := verifyOverHTTP(t, spec, bytes.NewReader(body), svc.headers(body, testToken))
			g.Expect(got.err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK))
			g.Expect(got.res.Event).To(Equal(svc.event))
			g.Expect(got.res.Skip).To(BeFalse())
			g.Expect(got.res.Payload).NotTo(BeEmpty())
		})
		t.Run(svc.typ+"/event not in spec.events", func(t *testing.T) {
			g := NewWithT(t)
			spec := Spec{Type: svc.typ, Token: testToken, Events: []string{"not-this-event"}}
			got, status := verifyOverHTTP(t, spec, bytes.NewReader(body), svc.headers(body, testToken))
			g.Expect(got.err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK))
			g.Expect(got.res.Skip).To(Equal(svc.filters), "spec.events applies to %s: %v", svc.typ, svc.filters)
			g.Expect(FiltersEvents(svc.typ)).To(Equal(svc.filters))
			if svc.filters {
				g.Expect(got.res.Reason).To(ContainSubstring("not in spec.events"))
			}
		})
		t.Run(svc.typ+"/malformed JSON", func(t *testing.T) {
			g := NewWithT(t)
			bad := []byte(`{"ref": "refs/heads/main", `)
			got, status := verifyOverHTTP(t, Spec{Type: svc.typ, Token: testToken}, bytes.NewReader(bad), svc.headers(bad, testToken))
			if !svc.jsonOnly {
				g.Expect(got.err).NotTo(HaveOccurred())
				g.Expect(got.res.Payload).To(BeNil())
				return
			}
			g.Expect(errors.Is(got.err, ErrBadPayload)).To(BeTrue(), "%v", got.err)
			g.Expect(status).To(Equal(http.StatusBadRequest))
		})
		if svc.authHeader == "" {
			continue
		}
		t.Run(svc.typ+"/wrong token", func(t *testing.T) {
			expectUnauthorized(t, svc.typ, body, svc.headers(body, wrongToken))
		})
		t.Run(svc.typ+"/unsigned", func(t *testing.T) {
			h := svc.headers(body, testToken)
			h.Del(svc.authHeader)
			expectUnauthorized(t, svc.typ, body, h)
		})
		if svc.typ == TypeGitLab || svc.typ == TypeHarbor {
			continue // a token header does not cover the body
		}
		t.Run(svc.typ+"/tampered body", func(t *testing.T) {
			tampered := bytes.Replace(body, []byte(`"`), []byte(`'`), 1)
			expectUnauthorized(t, svc.typ, tampered, svc.headers(body, testToken))
		})
	}
}

// expectUnauthorized sends body with h to a Verify server and expects 401.
func expectUnauthorized(t *testing.T, typ string, body []byte, h http.Header) {
	t.Helper()
	g := NewWithT(t)
	got, status := verifyOverHTTP(t, Spec{Type: typ, Token: testToken}, bytes.NewReader(body), h)
	g.Expect(errors.Is(got.err, ErrUnauthorized)).To(BeTrue(), "%v", got.err)
	g.Expect(status).To(Equal(http.StatusUnauthorized))
	g.Expect(got.res).To(Equal(Result{}))
}

// TestVerifyPings: pings are answered without acting, even when
// spec.events lists their event, but only once authenticated.
func TestVerifyPings(t *testing.T) {
	tests := []struct {
		name  string
		typ   string
		body  string
		sign  func(h http.Header, body []byte, token string)
		event string
	}{
		{name: "github ping", typ: TypeGitHub, body: `{"zen":"Keep it logically awesome.","hook_id":42}`, event: "ping",
			sign: func(h http.Header, body []byte, token string) {
				h.Set("X-GitHub-Event", "ping")
				h.Set("X-Hub-Signature-256", "sha256="+hmacHex(sha256.New, token, body))
			}},
		{name: "bitbucket diagnostics:ping", typ: TypeBitbucket, body: `{"test":true}`, event: "diagnostics:ping",
			sign: func(h http.Header, body []byte, token string) {
				h.Set("X-Event-Key", "diagnostics:ping")
				h.Set("X-Hub-Signature", "sha256="+hmacHex(sha256.New, token, body))
			}},
		{name: "acr ping", typ: TypeACR, body: `{"id":"1","timestamp":"2024-01-01T00:00:00Z","action":"ping"}`, event: "ping",
			sign: func(http.Header, []byte, string) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := http.Header{"Content-Type": {"application/json"}}
			tt.sign(h, []byte(tt.body), testToken)
			spec := Spec{Type: tt.typ, Token: testToken, Events: []string{tt.event, "push"}}
			got, status := verifyOverHTTP(t, spec, strings.NewReader(tt.body), h)
			g.Expect(got.err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK))
			g.Expect(got.res.Skip).To(BeTrue())
			g.Expect(got.res.Event).To(Equal(tt.event))
			g.Expect(got.res.Reason).To(ContainSubstring("ping"))

			forged := http.Header{"Content-Type": {"application/json"}}
			tt.sign(forged, []byte(tt.body), wrongToken)
			got, _ = verifyOverHTTP(t, spec, strings.NewReader(tt.body), forged)
			if tt.typ != TypeACR { // ACR is authenticated by its path only
				g.Expect(errors.Is(got.err, ErrUnauthorized)).To(BeTrue(), "%v", got.err)
			}
		})
	}
}

// TestVerifySignatureHeaders covers the signature header forms: GitHub's
// legacy header and form content type, the generic-hmac algorithms, and
// malformed values.
func TestVerifySignatureHeaders(t *testing.T) {
	push := []byte(serviceOf(TypeGitHub).body)
	form := []byte("payload=" + url.QueryEscape(string(push)))
	tests := []struct {
		name    string
		typ     string
		body    []byte
		header  http.Header
		wantErr error
	}{
		{name: "github legacy X-Hub-Signature sha1", typ: TypeGitHub, body: push, header: http.Header{
			"X-Github-Event": {"push"}, "X-Hub-Signature": {"sha1=" + hmacHex(sha1.New, testToken, push)}}},
		{name: "github form content type", typ: TypeGitHub, body: form, header: http.Header{
			"X-Github-Event": {"push"}, "Content-Type": {"application/x-www-form-urlencoded"},
			"X-Hub-Signature-256": {"sha256=" + hmacHex(sha256.New, testToken, form)}}},
		{name: "github form without payload", typ: TypeGitHub, body: []byte("other=1"), wantErr: ErrBadPayload, header: http.Header{
			"X-Github-Event": {"push"}, "Content-Type": {"application/x-www-form-urlencoded"},
			"X-Hub-Signature-256": {"sha256=" + hmacHex(sha256.New, testToken, []byte("other=1"))}}},
		{name: "github: a wrong sha256 header is not rescued by a right sha1 one", typ: TypeGitHub, body: push, wantErr: ErrUnauthorized, header: http.Header{
			"X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha256=" + hmacHex(sha256.New, wrongToken, push)},
			"X-Hub-Signature": {"sha1=" + hmacHex(sha1.New, testToken, push)}}},
		{name: "github: sha1 in the sha256 header", typ: TypeGitHub, body: push, wantErr: ErrUnauthorized, header: http.Header{
			"X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha1=" + hmacHex(sha1.New, testToken, push)}}},
		{name: "github: no event header", typ: TypeGitHub, body: push, wantErr: ErrBadPayload, header: http.Header{
			"X-Hub-Signature-256": {"sha256=" + hmacHex(sha256.New, testToken, push)}}},
		{name: "generic-hmac sha1", typ: TypeGenericHMAC, body: push, header: http.Header{
			"X-Signature": {"sha1=" + hmacHex(sha1.New, testToken, push)}}},
		{name: "generic-hmac sha512, upper-case", typ: TypeGenericHMAC, body: push, header: http.Header{
			"X-Signature": {"SHA512=" + strings.ToUpper(hmacHex(sha512.New, testToken, push))}}},
		{name: "generic-hmac unknown algorithm", typ: TypeGenericHMAC, body: push, wantErr: ErrUnauthorized, header: http.Header{
			"X-Signature": {"md5=" + hmacHex(sha256.New, testToken, push)}}},
		{name: "generic-hmac without algorithm", typ: TypeGenericHMAC, body: push, wantErr: ErrUnauthorized, header: http.Header{
			"X-Signature": {hmacHex(sha256.New, testToken, push)}}},
		{name: "generic-hmac not hex", typ: TypeGenericHMAC, body: push, wantErr: ErrUnauthorized, header: http.Header{
			"X-Signature": {"sha256=zz"}}},
		{name: "generic-hmac truncated", typ: TypeGenericHMAC, body: push, wantErr: ErrUnauthorized, header: http.Header{
			"X-Signature": {"sha256=" + hmacHex(sha256.New, testToken, push)[:40]}}},
		{name: "nexus signature of another body", typ: TypeNexus, body: push, wantErr: ErrUnauthorized, header: http.Header{
			"X-Nexus-Webhook-Signature": {hmacHex(sha1.New, testToken, []byte("{}"))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, status := verifyOverHTTP(t, Spec{Type: tt.typ, Token: testToken}, bytes.NewReader(tt.body), tt.header)
			if tt.wantErr == nil {
				g.Expect(got.err).NotTo(HaveOccurred())
				g.Expect(got.res.Payload).To(HaveKeyWithValue("ref", "refs/heads/main"))
				return
			}
			g.Expect(errors.Is(got.err, tt.wantErr)).To(BeTrue(), "%v", got.err)
			g.Expect(status).To(Equal(HTTPStatus(tt.wantErr)))
		})
	}
}

// TestVerifyPayloadShapes: an authentic request whose payload is not of the
// shape its service sends is refused; the documented variants are accepted.
func TestVerifyPayloadShapes(t *testing.T) {
	cdevent := serviceOf(TypeCDEvents).body
	tests := []struct {
		name      string
		typ       string
		body      string
		header    http.Header
		wantErr   bool
		wantEvent string
	}{
		{name: "dockerhub without push_data", typ: TypeDockerHub, body: `{"repository":{"repo_name":"a/b"}}`, wantErr: true},
		{name: "dockerhub without repo_name", typ: TypeDockerHub, body: `{"push_data":{},"repository":{}}`, wantErr: true},
		{name: "quay without updated_tags", typ: TypeQuay, body: `{"docker_url":"quay.io/a/b"}`, wantErr: true},
		{name: "quay with tag-to-digest updated_tags", typ: TypeQuay, wantEvent: "push",
			body: `{"repository":"devtable/ubuntu","docker_url":"quay.io/devtable/ubuntu","updated_tags":{"latest":"b750fe79"}}`},
		{name: "acr without target.repository", typ: TypeACR, body: `{"action":"push","target":{}}`, wantErr: true},
		{name: "acr chart push", typ: TypeACR, wantEvent: "chart_push",
			body: `{"action":"chart_push","target":{"repository":"mychart","tag":"1.0.0"}}`},
		{name: "harbor without type", typ: TypeHarbor, body: `{"event_data":{}}`, wantErr: true},
		{name: "harbor CloudEvents format", typ: TypeHarbor, wantEvent: "harbor.artifact.pushed",
			body: `{"specversion":"1.0","id":"1","source":"/projects/1/webhook/policies/1","type":"harbor.artifact.pushed","data":{}}`},
		{name: "nexus without action", typ: TypeNexus, body: `{"repositoryName":"r"}`, wantErr: true},
		{name: "a JSON array", typ: TypeGitLab, body: `[{"object_kind":"push"}]`, wantErr: true},
		{name: "JSON null", typ: TypeGitLab, body: `null`, wantErr: true},
		{name: "an empty body", typ: TypeGitLab, body: ``, wantErr: true},
		{name: "two JSON objects", typ: TypeGitLab, body: `{} {}`, wantErr: true},
		{name: "cdevents: Ce-Type differs from context.type", typ: TypeCDEvents, body: cdevent, wantErr: true,
			header: http.Header{"Ce-Type": {"dev.cdevents.change.abandoned.0.2.0"}}},
		{name: "cdevents: not a CDEvent", typ: TypeCDEvents, body: `{"context":{"type":"com.example.x"},"subject":{}}`, wantErr: true,
			header: http.Header{"Ce-Type": {"com.example.x"}}},
		{name: "cdevents: no subject", typ: TypeCDEvents, body: `{"context":{"type":"dev.cdevents.change.merged.0.2.0"}}`, wantErr: true,
			header: http.Header{"Ce-Type": {"dev.cdevents.change.merged.0.2.0"}}},
		{name: "cdevents: structured mode", typ: TypeCDEvents, wantEvent: "dev.cdevents.change.merged.0.2.0",
			body:   `{"specversion":"1.0","id":"1","source":"/s","type":"dev.cdevents.change.merged.0.2.0","data":` + cdevent + `}`,
			header: http.Header{"Content-Type": {"application/cloudevents+json"}}},
		{name: "cdevents: neither Ce-Type nor structured", typ: TypeCDEvents, body: cdevent, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			signForType(h, tt.typ, []byte(tt.body), testToken)
			got, status := verifyOverHTTP(t, Spec{Type: tt.typ, Token: testToken}, strings.NewReader(tt.body), h)
			if tt.wantErr {
				g.Expect(errors.Is(got.err, ErrBadPayload)).To(BeTrue(), "%v", got.err)
				g.Expect(status).To(Equal(http.StatusBadRequest))
				return
			}
			g.Expect(got.err).NotTo(HaveOccurred())
			g.Expect(got.res.Event).To(Equal(tt.wantEvent))
		})
	}
}

// signForType adds the authentication headers of typ (and its event header
// where it is required) to h.
func signForType(h http.Header, typ string, body []byte, token string) {
	svc := serviceOf(typ)
	for k, v := range svc.headers(body, token) {
		if _, set := h[k]; !set && (k == svc.authHeader || k == "X-Gitlab-Event") {
			h[k] = v
		}
	}
}

// TestVerifyRefusesMisconfiguredReceivers: a Receiver without a token, or of
// an unknown type, accepts nothing.
func TestVerifyRefusesMisconfiguredReceivers(t *testing.T) {
	for _, svc := range services {
		t.Run(svc.typ, func(t *testing.T) {
			g := NewWithT(t)
			body := []byte(svc.body)
			got, status := verifyOverHTTP(t, Spec{Type: svc.typ}, bytes.NewReader(body), svc.headers(body, ""))
			g.Expect(errors.Is(got.err, ErrUnauthorized)).To(BeTrue(), "%v", got.err)
			g.Expect(status).To(Equal(http.StatusUnauthorized))
			g.Expect(got.read).To(BeZero())
		})
	}
	t.Run("unknown type", func(t *testing.T) {
		g := NewWithT(t)
		got, status := verifyOverHTTP(t, Spec{Type: "gcr", Token: testToken}, strings.NewReader(`{}`), http.Header{})
		g.Expect(errors.Is(got.err, ErrUnsupportedType)).To(BeTrue(), "%v", got.err)
		g.Expect(got.err.Error()).To(ContainSubstring("generic-hmac"))
		g.Expect(status).To(Equal(http.StatusInternalServerError))
		g.Expect(Types()).To(HaveLen(11))
	})
}

// TestErrorsNeverHoldSecrets: whatever is wrong with a request, the error
// holds neither the token, nor the signature Verify expected, nor the body.
func TestErrorsNeverHoldSecrets(t *testing.T) {
	const marker = "marker-from-the-body"
	body := []byte(`{"` + marker + `": x` + marker + `}`)
	expected := []string{
		hmacHex(sha256.New, testToken, body), hmacHex(sha1.New, testToken, body), hmacHex(sha512.New, testToken, body),
	}
	var errs []error
	for _, svc := range services {
		for _, token := range []string{testToken, wrongToken} {
			got, _ := verifyOverHTTP(t, Spec{Type: svc.typ, Token: testToken}, bytes.NewReader(body), svc.headers(body, token))
			errs = append(errs, got.err)
		}
	}
	errs = append(errs, func() error {
		_, err := Verify(mustRequest(t, body, http.Header{"X-Gitlab-Token": {testToken[:5]}}), Spec{Type: TypeGitLab, Token: testToken})
		return err
	}())
	g := NewWithT(t)
	failures := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		failures++
		g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
		g.Expect(err.Error()).NotTo(ContainSubstring(marker))
		for _, sig := range expected {
			g.Expect(err.Error()).NotTo(ContainSubstring(sig))
		}
	}
	// Every JSON type refused the body, every signed type the wrong token.
	g.Expect(failures).To(BeNumerically(">=", 9+6))
}

// mustRequest builds a request without a server, for checks that need none.
func mustRequest(t *testing.T, body []byte, h http.Header) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/hook/x", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = h
	return r
}

// TestWebhookPath against values computed outside Go with sha256sum.
func TestWebhookPath(t *testing.T) {
	g := NewWithT(t)
	// printf 'tokenwebapp-receiverflux-system' | sha256sum
	g.Expect(WebhookPath("token", "webapp-receiver", "flux-system")).To(Equal(
		"/hook/a9a90f40b9c500c7d5d10279a292a200c6cee3d74af0d04d823cb162087ca8b7"))
	// printf '' | sha256sum
	g.Expect(WebhookPath("", "", "")).To(Equal(
		"/hook/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
	g.Expect(WebhookPath("token2", "webapp-receiver", "flux-system")).NotTo(Equal(WebhookPath("token", "webapp-receiver", "flux-system")))
}

// TestHTTPStatus maps each kind of error, wrapped or not.
func TestHTTPStatus(t *testing.T) {
	g := NewWithT(t)
	g.Expect(HTTPStatus(nil)).To(Equal(http.StatusOK))
	g.Expect(HTTPStatus(unauthorized("x"))).To(Equal(http.StatusUnauthorized))
	g.Expect(HTTPStatus(ErrTooLarge)).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(HTTPStatus(badPayload("x"))).To(Equal(http.StatusBadRequest))
	g.Expect(HTTPStatus(ErrUnsupportedType)).To(Equal(http.StatusInternalServerError))
	g.Expect(HTTPStatus(errors.New("other"))).To(Equal(http.StatusInternalServerError))
}
