package notify

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
)

// TestCheckAddress: the addresses of security-2 risk 8 (loopback, AWS's
// IPv6 and Alibaba's metadata endpoints) are refused like link-local ones,
// each unless its switch allows it; private addresses, where in-cluster
// services live, are allowed.
func TestCheckAddress(t *testing.T) {
	tests := []struct {
		address   string
		cfg       Config
		wantErr   string
		wantNoLog string
	}{
		{address: "https://hooks.example.com/services/x"},
		{address: "http://127.0.0.1:8080/hook", wantErr: "loopback"},
		{address: "http://localhost:8080/hook", wantErr: "loopback"},
		{address: "http://[::1]:8080/hook", wantErr: "loopback"},
		{address: "http://127.0.0.1:8080/hook", cfg: Config{AllowLoopback: true}},
		{address: "http://169.254.169.254/latest/meta-data", wantErr: "link-local"},
		{address: "http://169.254.169.254/latest/meta-data", cfg: Config{AllowLinkLocal: true}},
		{address: "http://[fe80::1]/x", wantErr: "link-local"},
		{address: "http://[fd00:ec2::254]/latest/api/token", wantErr: "cloud metadata"},
		{address: "http://100.100.100.200/latest/meta-data", wantErr: "cloud metadata"},
		{address: "http://10.96.0.10:9093/api/v2/alerts"},
		{address: "ftp://example.com/x", wantErr: "the scheme must be https or http"},
		{address: "https://user:s3cret@example.com/x?token=t0k", wantErr: "", wantNoLog: "s3cret"},
		{address: "https:///x", wantErr: "no host"},
		{address: "https://user:ab/cd@hooks.example.com/r", wantErr: "invalid address: it is not a URL", wantNoLog: "ab/cd"},
		{address: "ftp://user:s3cret@example.com/x", wantErr: "the scheme must be", wantNoLog: "s3cret"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			g := NewWithT(t)
			_, err := CheckAddress(tt.address, tt.cfg.AddressPolicy())
			if err != nil && tt.wantNoLog != "" {
				g.Expect(err.Error()).NotTo(ContainSubstring(tt.wantNoLog))
			}
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// TestClientRefusesLinkLocal: a name or address that is link-local is
// refused when dialled, unless allowed.
func TestClientRefusesLinkLocal(t *testing.T) {
	g := NewWithT(t)
	err := Do(context.Background(), Client(Config{AllowLoopback: true, Timeout: 2e9}), Config{AllowLoopback: true}, Request{URL: "http://169.254.169.254/latest", Body: map[string]string{}})
	g.Expect(errors.Is(err, ErrLinkLocal)).To(BeTrue(), "%v", err)
}

// TestDo: the payload is sent as JSON with the configured headers; a non
// 2xx answer is a StatusError quoting the start of the answer, without the
// URL's credentials.
func TestDo(t *testing.T) {
	g := NewWithT(t)
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte("slow down"))
		}
	}))
	defer srv.Close()
	cfg := Config{AllowLoopback: true, Headers: map[string]string{"X-Team": "web", "Content-Type": "text/plain"}}
	g.Expect(Do(context.Background(), Client(cfg), cfg, Request{URL: srv.URL + "/ok", Body: map[string]int{"a": 1},
		Headers: map[string]string{"Authorization": "Bearer x"}})).To(Succeed())
	g.Expect(string(body)).To(Equal(`{"a":1}`))
	g.Expect(got.Header.Get("X-Team")).To(Equal("web"))
	g.Expect(got.Header.Get("Authorization")).To(Equal("Bearer x"))
	g.Expect(got.Method).To(Equal(http.MethodPost))

	err := Do(context.Background(), Client(cfg), cfg, Request{URL: "http://user:s3cret@" + srv.Listener.Addr().String() + "/fail?token=t0k", Body: []byte("x")})
	var se *StatusError
	g.Expect(errors.As(err, &se)).To(BeTrue())
	g.Expect(se.Code).To(Equal(http.StatusTooManyRequests))
	g.Expect(se.Retryable()).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("slow down"))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	g.Expect(err.Error()).NotTo(ContainSubstring("t0k"))
}

func TestText(t *testing.T) {
	g := NewWithT(t)
	m := Message{Event: eventv1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "apps"},
		Severity: eventv1.SeverityError, Message: "health check failed"}}
	g.Expect(ObjectID(m)).To(Equal("kustomization/apps.flux-system"))
	g.Expect(Text(m)).To(Equal("health check failed"))
	g.Expect(IsError(m)).To(BeTrue())
	m.Folded = 41
	g.Expect(Text(m)).To(Equal("health check failed\n(and 41 more like it)"))
	m.Folded, m.Resolves = 0, true
	g.Expect(Text(m)).To(Equal("Resolved: health check failed"))
	g.Expect(IsError(m)).To(BeFalse())
}

// TestScrubber: the token, the password, their basic-auth encodings and
// extra secrets leave error text; a StatusError stays one and other errors
// keep errors.Is.
func TestScrubber(t *testing.T) {
	g := NewWithT(t)
	s := NewScrubber(Config{AllowLoopback: true, Token: "t0ken-xyz", BasicUsername: "bot", Password: "pa55word"}, "/services/T0/B0/secret")
	basic := base64.StdEncoding.EncodeToString([]byte("bot:pa55word"))
	text := s.String("Authorization: Basic " + basic + " token=t0ken-xyz url=https://h/services/T0/B0/secret pa55word")
	g.Expect(text).To(Equal("Authorization: Basic *** token=*** url=https://h*** ***"))

	err := s.Error(&StatusError{URL: "https://h/x?k=t0ken-xyz", Code: 500, Answer: "echo pa55word"})
	var se *StatusError
	g.Expect(errors.As(err, &se)).To(BeTrue())
	g.Expect(se.Retryable()).To(BeTrue())
	g.Expect(err.Error()).NotTo(ContainSubstring("t0ken-xyz"))
	g.Expect(err.Error()).NotTo(ContainSubstring("pa55word"))

	err = s.Error(fmt.Errorf("dialing with t0ken-xyz: %w", ErrLinkLocal))
	g.Expect(errors.Is(err, ErrLinkLocal)).To(BeTrue())
	g.Expect(err.Error()).To(Equal("dialing with ***: " + ErrLinkLocal.Error()))
	plain := errors.New("no secret here")
	g.Expect(s.Error(plain)).To(BeIdenticalTo(plain))
	g.Expect(s.Error(nil)).To(BeNil())
}

// TestScrubberHeaders: the values of the Secret's headers, often API keys,
// and the credential after an auth scheme, leave error text; values too
// short to be secrets stay, so that the text is not mangled.
func TestScrubberHeaders(t *testing.T) {
	g := NewWithT(t)
	s := NewScrubber(Config{AllowLoopback: true, Headers: map[string]string{
		"X-Api-Key":     "k3y-0f-the-service",
		"Authorization": "GenieKey 9d1f-aa20",
		"X-Team":        "web",
		"X-Empty":       "",
	}})
	text := s.String("401: key k3y-0f-the-service, auth GenieKey 9d1f-aa20, token 9d1f-aa20, team web")
	g.Expect(text).To(Equal("401: key ***, auth ***, token ***, team web"))
	err := s.Error(&StatusError{URL: "https://h/x", Code: 401, Answer: "echo: k3y-0f-the-service"})
	g.Expect(err.Error()).NotTo(ContainSubstring("k3y-0f-the-service"))
}
