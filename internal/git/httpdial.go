package git

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// go-git picks its HTTP transport from a process-wide registry and gives it
// no per-call http.Client. So the package installs, once in init (before
// any clone; the registry is not safe for concurrent writes), a router for
// http and https: an endpoint whose proxy URL names a registered operation
// (see operation.go) goes through that operation's own net/http transport;
// every other endpoint goes to the transport that was registered before,
// unchanged. Were the router replaced, the proxy URL would make go-git fail
// on an unknown proxy scheme: a Clone never runs uncounted.

func init() {
	for _, scheme := range []string{TransportHTTP, TransportHTTPS} {
		client.InstallProtocol(scheme, &httpRouter{fallback: client.Protocols[scheme]})
	}
}

// httpRouter is the go-git transport registered for http and https.
type httpRouter struct {
	fallback transport.Transport
}

// NewUploadPackSession implements transport.Transport.
func (r *httpRouter) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (
	transport.UploadPackSession, error) {
	t, ep, err := r.route(ep)
	if err != nil {
		return nil, err
	}
	return t.NewUploadPackSession(ep, auth)
}

// NewReceivePackSession implements transport.Transport.
func (r *httpRouter) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (
	transport.ReceivePackSession, error) {
	t, ep, err := r.route(ep)
	if err != nil {
		return nil, err
	}
	return t.NewReceivePackSession(ep, auth)
}

// route returns the transport for ep and the endpoint to give it: for an
// operation's endpoint, a copy with the user's proxy in place of the
// routing URL.
func (r *httpRouter) route(ep *transport.Endpoint) (transport.Transport, *transport.Endpoint, error) {
	u, err := url.Parse(ep.Proxy.URL)
	if err != nil || u.Scheme != ctxDialScheme {
		return r.fallback, ep, nil
	}
	op, ok := lookupOperation(u)
	if !ok {
		return nil, nil, errors.New("http: the clone operation has ended")
	}
	routed := *ep
	routed.Proxy = transport.ProxyOptions{}
	if op.userProxy != nil {
		routed.Proxy = transport.ProxyOptions{URL: op.userProxy.URL,
			Username: op.userProxy.Username, Password: op.userProxy.Password}
	}
	return op.httpTransport(), &routed, nil
}

// httpTransport returns the operation's go-git HTTP client, built once: a
// copy of net/http's default transport (same proxy environment, timeouts
// and HTTP/2) whose connections are dialled by the operation. go-git copies
// it again to add a CA bundle, a client certificate or a proxy, keeping the
// dialer. Transparent gzip is off, so what the remote sends is what is
// counted: a compressed response could otherwise expand without bound.
func (op *operation) httpTransport() transport.Transport {
	op.httpOnce.Do(func() {
		tr := baseHTTPTransport()
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return op.dial(ctx, dialer, network, addr)
		}
		tr.DialTLSContext = nil
		tr.DisableCompression = true
		op.http = githttp.NewClient(&http.Client{Transport: tr})
	})
	return op.http
}

// baseHTTPTransport returns a copy of http.DefaultTransport, or an
// equivalent transport when something replaced it with another type.
func baseHTTPTransport() *http.Transport {
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		return tr.Clone()
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
