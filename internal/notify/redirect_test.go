package notify

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// capture is a loopback server that records the requests it gets.
type capture struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func newCapture(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *capture {
	c := &capture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, r.Clone(context.Background()))
		c.body = append(c.body, string(body))
		c.mu.Unlock()
		if handler != nil {
			handler(w, r)
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *capture) received() ([]*http.Request, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*http.Request(nil), c.reqs...), append([]string(nil), c.body...)
}

// redirectTo answers every request with a 307 to location.
func redirectTo(location string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusTemporaryRedirect)
	}
}

// TestRedirectToAnotherHost: a service that redirects a request to
// another host does not get it there, with the credentials that Go's
// client would forward (all but Authorization): the request fails with
// ErrCrossHostRedirect, which is not retried.
func TestRedirectToAnotherHost(t *testing.T) {
	g := NewWithT(t)
	elsewhere := newCapture(t, nil)
	// 127.0.0.1 and localhost are the same machine, but other hosts.
	other := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1) + "/collect"
	service := newCapture(t, redirectTo(other))
	cfg := Config{AllowLoopback: true, Headers: map[string]string{"X-Api-Key": "k3y-redirected", "PRIVATE-TOKEN": "t0k-redirected"}}
	err := Do(context.Background(), Client(cfg), cfg, Request{URL: service.URL + "/hook", Body: map[string]string{"text": "hi"},
		Headers: map[string]string{"DD-API-KEY": "dd-redirected"}})
	g.Expect(errors.Is(err, ErrCrossHostRedirect)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("localhost"))
	var se *StatusError
	g.Expect(errors.As(err, &se)).To(BeFalse(), "not a StatusError, whose 5xx would be retried")
	reqs, _ := elsewhere.received()
	g.Expect(reqs).To(BeEmpty(), "the other host got nothing")
	reqs, _ = service.received()
	g.Expect(reqs).To(HaveLen(1))

}

// TestRedirectWithinHost: a redirect to another path of the same host is
// followed with the body and headers.
func TestRedirectWithinHost(t *testing.T) {
	g := NewWithT(t)
	var service *capture
	service = newCapture(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, service.URL+"/new", http.StatusPermanentRedirect)
		}
	})
	cfg := Config{AllowLoopback: true, Headers: map[string]string{"X-Api-Key": "k3y"}}
	g.Expect(Do(context.Background(), Client(cfg), cfg, Request{URL: service.URL + "/old", Body: map[string]int{"a": 1}})).To(Succeed())
	reqs, bodies := service.received()
	g.Expect(reqs).To(HaveLen(2))
	g.Expect(reqs[1].URL.Path).To(Equal("/new"))
	g.Expect(reqs[1].Method).To(Equal(http.MethodPost))
	g.Expect(reqs[1].Header.Get("X-Api-Key")).To(Equal("k3y"))
	g.Expect(bodies[1]).To(Equal(`{"a":1}`))
}

// TestRedirectToLinkLocal: a service cannot send a request on to a cloud
// metadata endpoint by redirecting it there (security.md row 30).
func TestRedirectToLinkLocal(t *testing.T) {
	g := NewWithT(t)
	service := newCapture(t, redirectTo("http://169.254.169.254/latest/meta-data/"))
	cfg := Config{AllowLoopback: true}
	err := Do(context.Background(), Client(cfg), cfg, Request{URL: service.URL, Body: []byte("x")})
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, ErrCrossHostRedirect) || errors.Is(err, ErrLinkLocal)).To(BeTrue(), "%v", err)
}
