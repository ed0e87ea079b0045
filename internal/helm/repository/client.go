package repository

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/netguard"
)

// Defaults of ClientOptions.
const (
	// DefaultTimeout bounds a whole request, body included.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxIndexSize bounds the size of an index.
	DefaultMaxIndexSize int64 = 50 << 20
	// DefaultMaxChartSize bounds the size of a packaged chart.
	DefaultMaxChartSize int64 = 10 << 20
)

// maxRedirects is how many redirects a request follows.
const maxRedirects = 10

// maxTransports bounds the shared transports kept (one per TLS and proxy
// setting); the least recently used one is closed beyond it.
const maxTransports = 64

// ClientOptions say how to reach an HTTP chart repository.
type ClientOptions struct {
	// Username and Password are sent with basic auth to the origin of the
	// repository's URL only, unless PassCredentials.
	Username, Password string
	// CertData is the data of a certSecretRef Secret (ca.crt, tls.crt,
	// tls.key; see internal/httptransport.TLSConfig), nil for the system
	// defaults. Transports are shared between calls with equal CertData and
	// Proxy.
	CertData map[string][]byte
	// Proxy is the proxy to use, nil for the environment's.
	Proxy *url.URL
	// PassCredentials sends the credentials to every host: chart URLs on
	// other hosts and redirect targets.
	PassCredentials bool
	// Timeout bounds each request, body included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxIndexSize and MaxChartSize bound what FetchIndex and DownloadChart
	// read; zero means DefaultMaxIndexSize and DefaultMaxChartSize.
	MaxIndexSize, MaxChartSize int64
	// UserAgent, when set, is sent with every request.
	UserAgent string
	// Addresses, when set, are the addresses requests may reach (every
	// host, redirects included); nil allows every address.
	Addresses *netguard.Policy
}

// timeout returns the request timeout.
func (o ClientOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// maxIndexSize returns the index size limit.
func (o ClientOptions) maxIndexSize() int64 {
	if o.MaxIndexSize > 0 {
		return o.MaxIndexSize
	}
	return DefaultMaxIndexSize
}

// maxChartSize returns the chart size limit.
func (o ClientOptions) maxChartSize() int64 {
	if o.MaxChartSize > 0 {
		return o.MaxChartSize
	}
	return DefaultMaxChartSize
}

// NewClient returns an HTTP client for the repository at repoURL: the
// transport shared by every client with the same CertData and Proxy, the
// credentials sent only as ClientOptions says, and at most 10 redirects.
// It sets no timeout: callers bound requests with their context.
func NewClient(repoURL string, o ClientOptions) (*http.Client, error) {
	u, err := parseHTTPURL(repoURL)
	if err != nil {
		return nil, err
	}
	if o.Addresses != nil {
		if err := o.Addresses.CheckHost(u.Hostname()); err != nil {
			return nil, err
		}
	}
	base, err := sharedTransport(o)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport: &authTransport{
			base: base, origin: origin(u), user: o.Username, pass: o.Password,
			passCredentials: o.PassCredentials, userAgent: o.UserAgent,
		},
		CheckRedirect: checkRedirect,
	}, nil
}

// checkRedirect stops after maxRedirects.
func checkRedirect(_ *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// authTransport adds the credentials to the requests for the repository's
// origin (or every request with passCredentials) and the user agent.
type authTransport struct {
	base            http.RoundTripper
	origin          string
	user, pass      string
	passCredentials bool
	userAgent       string
}

// RoundTrip sends req through the base transport, with credentials when
// its URL's origin is the repository's.
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	withCreds := (t.user != "" || t.pass != "") && (t.passCredentials || origin(req.URL) == t.origin)
	if !withCreds && t.userAgent == "" {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	if withCreds {
		r.SetBasicAuth(t.user, t.pass)
	}
	if t.userAgent != "" {
		r.Header.Set("User-Agent", t.userAgent)
	}
	return t.base.RoundTrip(r)
}

// origin returns scheme://host:port of u, lower case, with the scheme's
// default port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// parseHTTPURL parses an http(s) URL with a host.
func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q is not an http:// or https:// URL with a host",
			ErrInvalidURL, redactURL(raw))
	}
	return u, nil
}

// ErrInvalidURL is wrapped by the errors about a URL that cannot be used.
var ErrInvalidURL = errors.New("invalid URL")

// transports holds the shared transports, keyed by a hash of their TLS and
// proxy settings.
var transports = &transportCache{max: maxTransports, items: map[[32]byte]*list.Element{}, order: list.New()}

// transportCache is an LRU of transports.
type transportCache struct {
	mu    sync.Mutex
	max   int
	items map[[32]byte]*list.Element
	order *list.List
}

// transportEntry is one cached transport.
type transportEntry struct {
	key [32]byte
	t   *http.Transport
}

// sharedTransport returns the transport for o's CertData and Proxy,
// building it on first use.
func sharedTransport(o ClientOptions) (*http.Transport, error) {
	key := transportKey(o)
	c := transports
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*transportEntry).t, nil
	}
	tlsConfig, err := httptransport.TLSConfig(o.CertData)
	if err != nil {
		return nil, fmt.Errorf("TLS settings: %w", err)
	}
	t := httptransport.New(tlsConfig, o.Proxy)
	if o.Addresses != nil {
		t.DialContext = o.Addresses.Dialer(30 * time.Second).DialContext
	}
	c.items[key] = c.order.PushFront(&transportEntry{key: key, t: t})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		e := last.Value.(*transportEntry)
		delete(c.items, e.key)
		e.t.CloseIdleConnections()
	}
	return t, nil
}

// transportKey hashes the settings that make a transport: the TLS keys of
// CertData and the proxy URL (with its credentials).
func transportKey(o ClientOptions) [32]byte {
	h := sha256.New()
	write := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, int64(len(b)))
		h.Write(b)
	}
	write([]byte{boolByte(o.CertData != nil)})
	for _, k := range []string{httptransport.KeyCA, httptransport.KeyClientCert, httptransport.KeyClientKey} {
		write(o.CertData[k])
	}
	if o.Proxy != nil {
		write([]byte(o.Proxy.String()))
	}
	if a := o.Addresses; a != nil {
		write([]byte{boolByte(a.AllowLinkLocal), boolByte(a.AllowLoopback), boolByte(a.AllowPrivate)})
	}
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return key
}

// boolByte returns 1 for true.
func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// withTimeout returns ctx bounded by o's timeout.
func withTimeout(ctx context.Context, o ClientOptions) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.timeout())
}
