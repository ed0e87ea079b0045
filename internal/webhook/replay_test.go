package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// timedRequest is a generic-hmac request signed at `at` with token, as a
// sender following the documentation makes it.
func timedRequest(g Gomega, at time.Time, token string, body []byte) *http.Request {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://127.0.0.1/hook/x", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	ts := strconv.FormatInt(at.Unix(), 10)
	req.Header.Set(TimestampHeader, ts)
	req.Header.Set("X-Signature", "sha256="+hexHMAC(sha256.New, token, []byte(ts+"."+string(body))))
	return req
}

// A timed signature covers the time: the time changed, removed, or not a
// number, the request is refused; a request signed over the body alone
// still passes, with no time.
func TestVerify_TimedSignatureCoversTheTime(t *testing.T) {
	g := NewWithT(t)
	spec := Spec{Type: TypeGenericHMAC, Token: testToken}
	body := []byte(`{"approve":"prod"}`)
	at := time.Unix(1_800_000_000, 0)

	res, err := Verify(timedRequest(g, at, testToken, body), spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.SignedAt).To(Equal(at))

	for name, change := range map[string]func(h http.Header){
		"later time":   func(h http.Header) { h.Set(TimestampHeader, strconv.FormatInt(at.Unix()+600, 10)) },
		"no time":      func(h http.Header) { h.Del(TimestampHeader) },
		"not a number": func(h http.Header) { h.Set(TimestampHeader, "2026-11-25T14:00:00Z") },
	} {
		req := timedRequest(g, at, testToken, body)
		change(req.Header)
		_, err := Verify(req, spec)
		g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "%s: %v", name, err)
	}

	untimed, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://127.0.0.1/hook/x", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	untimed.Header.Set("X-Signature", "sha256="+hexHMAC(sha256.New, testToken, body))
	res, err = Verify(untimed, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.SignedAt.IsZero()).To(BeTrue())
}

// The guard takes a timed request once, within MaxRequestAge of its time
// either way; the same body signed at another second is a new request;
// requests without a time pass as often as they come.
func TestReplayGuard_Admit(t *testing.T) {
	g := NewWithT(t)
	spec := Spec{Type: TypeGenericHMAC, Token: testToken}
	now := time.Unix(1_800_000_000, 0)
	verified := func(at time.Time) Result {
		res, err := Verify(timedRequest(g, at, testToken, []byte(`{}`)), spec)
		g.Expect(err).NotTo(HaveOccurred())
		return res
	}
	tests := []struct {
		name     string
		receiver string
		res      Result
		wantErr  error
	}{
		{"fresh", "ns/a", verified(now), nil},
		{"the same again", "ns/a", verified(now), ErrUnauthorized},
		{"the same to another Receiver", "ns/b", verified(now), nil},
		{"signed a second later", "ns/a", verified(now.Add(time.Second)), nil},
		{"at the edge of the past", "ns/a", verified(now.Add(-MaxRequestAge)), nil},
		{"too old", "ns/a", verified(now.Add(-MaxRequestAge - time.Second)), ErrUnauthorized},
		{"too far ahead", "ns/a", verified(now.Add(MaxRequestAge + time.Second)), ErrUnauthorized},
		{"untimed", "ns/a", Result{}, nil},
		{"untimed again", "ns/a", Result{}, nil},
	}
	guard := &ReplayGuard{}
	for _, tt := range tests {
		err := guard.Admit(tt.receiver, tt.res, now)
		if tt.wantErr == nil {
			g.Expect(err).NotTo(HaveOccurred(), tt.name)
		} else {
			g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "%s: %v", tt.name, err)
		}
	}
}

// Each Receiver has its own share: one that is sent more timed requests
// than the guard remembers is answered 429 until its oldest lapse, and
// the others are taken meanwhile; what lapses is forgotten.
func TestReplayGuard_BoundedPerReceiver(t *testing.T) {
	g := NewWithT(t)
	spec := Spec{Type: TypeGenericHMAC, Token: testToken}
	now := time.Unix(1_800_000_000, 0)
	guard := &ReplayGuard{MaxPerReceiver: 3}
	for i := range 3 {
		res, err := Verify(timedRequest(g, now.Add(time.Duration(i)*time.Second), testToken, []byte(`{}`)), spec)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(guard.Admit("ns/noisy", res, now)).To(Succeed())
	}
	fourth, err := Verify(timedRequest(g, now.Add(3*time.Second), testToken, []byte(`{}`)), spec)
	g.Expect(err).NotTo(HaveOccurred())
	err = guard.Admit("ns/noisy", fourth, now)
	g.Expect(errors.Is(err, ErrBusy)).To(BeTrue(), "%v", err)
	g.Expect(HTTPStatus(err)).To(Equal(http.StatusTooManyRequests))

	quiet, err := Verify(timedRequest(g, now.Add(4*time.Minute), testToken, []byte(`{"x":1}`)), spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(guard.Admit("ns/quiet", quiet, now)).To(Succeed())

	later := now.Add(MaxRequestAge + 2*time.Second) // the first two have lapsed
	fresh, err := Verify(timedRequest(g, later, testToken, []byte(`{}`)), spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(guard.Admit("ns/noisy", fresh, later)).To(Succeed())
	g.Expect(guard.seen["ns/noisy"]).To(HaveLen(2), "the lapsed requests are forgotten")
	g.Expect(guard.seen).To(HaveKey("ns/quiet"), "not lapsed yet")
}
