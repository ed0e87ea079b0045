package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/netguard"
	"github.com/windlass-dev/windlass/internal/redact"
)

// ErrLinkLocal is the error of a request to a link-local address or a
// cloud metadata endpoint while Config.AllowLinkLocal is off.
var ErrLinkLocal = netguard.ErrLinkLocal

// ErrLoopback is the error of a request to the controller's own host while
// Config.AllowLoopback is off.
var ErrLoopback = netguard.ErrLoopback

// ErrCrossHostRedirect is the error of a request that the service
// redirected to another host (or from https to http): the request carries
// the Provider's credentials in its headers, which Go's client would
// forward there (all but Authorization), so it is not followed.
var ErrCrossHostRedirect = errors.New("the service redirected the request to another host, which would receive the Provider's credentials: not followed")

// maxAnswer is how much of an error answer is read and quoted.
const maxAnswer = 512

// maxRedirects bounds the redirects followed within one host.
const maxRedirects = 10

// AddressPolicy returns the addresses cfg may reach: public and private
// ones, link-local and metadata ones when AllowLinkLocal, loopback when
// AllowLoopback (see internal/netguard).
func (cfg Config) AddressPolicy() netguard.Policy {
	return netguard.Policy{AllowLinkLocal: cfg.AllowLinkLocal, AllowLoopback: cfg.AllowLoopback, AllowPrivate: true}
}

// Client returns the HTTP client of cfg: its TLS, proxy and timeout, a
// dialer that connects only to the addresses of cfg's AddressPolicy, and
// redirects followed only within the host of the request
// (ErrCrossHostRedirect).
func Client(cfg Config) *http.Client {
	transport := httptransport.New(cfg.TLS, cfg.Proxy)
	transport.DialContext = Dialer(cfg, 30*time.Second).DialContext
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &http.Client{Transport: transport, Timeout: timeout, CheckRedirect: sameHostRedirect}
}

// Dialer returns a dialer with timeout that connects only to the addresses
// of cfg's AddressPolicy, for providers that open their own connections.
func Dialer(cfg Config, timeout time.Duration) *net.Dialer {
	return cfg.AddressPolicy().Dialer(timeout)
}

// sameHostRedirect is a client's CheckRedirect: it follows a redirect to
// the host and scheme of the first request, up to maxRedirects.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	first := via[0].URL
	if !strings.EqualFold(req.URL.Host, first.Host) || (first.Scheme == "https" && req.URL.Scheme != "https") {
		return fmt.Errorf("%w (to %s)", ErrCrossHostRedirect, redact.URL(req.URL.Scheme+"://"+req.URL.Host))
	}
	return nil
}

// CheckAddress refuses an address that is not an absolute http(s) URL, or
// whose host is a literal address policy refuses (a name that resolves to
// one is refused when it is dialled). The error never quotes the address's
// credentials or query.
func CheckAddress(address string, policy netguard.Policy) (*url.URL, error) {
	u, err := url.Parse(address)
	if err != nil {
		// Neither the address nor the parser's error, which quotes it, is
		// shown: where a password holds '/', no rule finds its end.
		return nil, errors.New("invalid address: it is not a URL (not shown, for it may hold a password)")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("invalid address %q: the scheme must be https or http", redact.URL(address))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("invalid address %q: no host", redact.URL(address))
	}
	if err := policy.CheckHost(u.Hostname()); err != nil {
		return nil, fmt.Errorf("address %q: %w", redact.URL(address), err)
	}
	return u, nil
}

// StatusError is the error of a request the service answered with a
// status other than 2xx.
type StatusError struct {
	// Method is the request's method (POST when empty).
	Method string
	// URL is the request's URL, redacted.
	URL string
	// Code is the HTTP status code.
	Code int
	// Answer is the start of the answer's body, redacted.
	Answer string
}

// Error implements error.
func (e *StatusError) Error() string {
	method := e.Method
	if method == "" {
		method = http.MethodPost
	}
	msg := fmt.Sprintf("%s %s: %d %s", method, e.URL, e.Code, http.StatusText(e.Code))
	if e.Answer != "" {
		msg += ": " + e.Answer
	}
	return msg
}

// Retryable tells whether the request may succeed when sent again: the
// service was overloaded, rate-limited or failed.
func (e *StatusError) Retryable() bool {
	return e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout || e.Code >= 500
}

// Request is one HTTP request of a provider.
type Request struct {
	// Method is POST when empty.
	Method string
	// URL is where it goes.
	URL string
	// Body is sent as JSON, unless it is a []byte (sent as is); a request
	// without Body has no body.
	Body any
	// ContentType is application/json when empty.
	ContentType string
	// Headers are added (after cfg.Headers, so they win).
	Headers map[string]string
	// Into, when set, receives the JSON answer of a 2xx answer (read up to
	// maxJSONAnswer).
	Into any
}

// maxJSONAnswer bounds a JSON answer that a provider reads.
const maxJSONAnswer = 8 << 20

// Do sends req with client, adding cfg's headers, and returns an error
// unless the answer is 2xx. The answer's body is read up to a bound and
// decoded into req.Into, or discarded.
func Do(ctx context.Context, client *http.Client, cfg Config, req Request) error {
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	r, err := newRequest(ctx, method, req)
	if err != nil {
		return err
	}
	for k, v := range cfg.Headers {
		r.Header.Set(k, v)
	}
	for k, v := range req.Headers {
		r.Header.Set(k, v)
	}
	resp, err := client.Do(r)
	if err != nil {
		return redact.Error(fmt.Errorf("%s %s: %w", method, redact.URL(req.URL), unwrapURLError(err)))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return &StatusError{Method: method, URL: redact.URL(req.URL), Code: resp.StatusCode, Answer: redact.String(strings.TrimSpace(string(answer)))}
	}
	if req.Into == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONAnswer)).Decode(req.Into); err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, redact.URL(req.URL), err)
	}
	return nil
}

// newRequest returns the HTTP request of req: its body and Content-Type,
// none for a request without Body.
func newRequest(ctx context.Context, method string, req Request) (*http.Request, error) {
	var body io.Reader
	if req.Body != nil {
		data, ok := req.Body.([]byte)
		if !ok {
			var err error
			if data, err = json.Marshal(req.Body); err != nil {
				return nil, fmt.Errorf("encoding the payload: %w", err)
			}
		}
		body = bytes.NewReader(data)
	}
	r, err := http.NewRequestWithContext(ctx, method, req.URL, body)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q", redact.URL(req.URL))
	}
	if req.Body != nil {
		contentType := req.ContentType
		if contentType == "" {
			contentType = "application/json"
		}
		r.Header.Set("Content-Type", contentType)
	}
	return r, nil
}

// unwrapURLError drops the *url.Error around err: it quotes the URL whole.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
