package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/oci"
)

// Defaults and bounds of Options.
const (
	// DefaultTimeout bounds a scan or a digest request when
	// Options.Timeout is zero.
	DefaultTimeout = time.Minute
	// DefaultMaxTags is the safety cap on the tags a registry may list
	// when Options.MaxTags is zero.
	DefaultMaxTags = 100_000
	// DefaultPageSize is how many tags each list request asks for (the n
	// parameter) when Options.PageSize is zero.
	DefaultPageSize = 1000
	// MaxResponseBytes caps the body of every response of a registry: a
	// page of tags, a token, an error.
	MaxResponseBytes = 16 << 20
)

// DefaultExclusions is the exclusion list of an ImageRepository that sets
// none: cosign signatures.
var DefaultExclusions = []string{`^.*\.sig$`}

// Options say which repository to scan and how to reach its registry.
type Options struct {
	// Image is the repository, as ParseImage reads it.
	Image string
	// Insecure allows plain HTTP. Without it, plain HTTP is refused
	// except to a loopback address.
	Insecure bool
	// DockerConfigs are the .dockerconfigjson of the credential Secrets
	// (secretRef, then the service account's image pull secrets); the
	// first that names the registry wins, and empty ones are skipped.
	// Only the entry of the repository's registry host is used, and its
	// credentials are sent to that host only (and to the token service it
	// names), never to a host a response redirects to.
	DockerConfigs [][]byte
	// CA, ClientCert and ClientKey are the ca.crt, tls.crt and tls.key of
	// the certSecretRef Secret.
	CA, ClientCert, ClientKey []byte
	// Proxy is the proxySecretRef's proxy, with its user and password;
	// nil means the proxy of the environment (HTTPS_PROXY, NO_PROXY).
	Proxy *url.URL
	// Timeout bounds the whole scan, every page included, or the digest
	// request; zero means DefaultTimeout.
	Timeout time.Duration
	// Exclusions are the regular expressions of the tags to leave out;
	// nil means DefaultExclusions, an empty list none.
	Exclusions []string
	// MaxTags caps the tags the registry may list, excluded ones
	// included; zero means DefaultMaxTags. A longer list fails the scan
	// and nothing is written.
	MaxTags int
	// PageSize is how many tags each list request asks for; zero means
	// DefaultPageSize.
	PageSize int

	// responseLimit, when set, replaces MaxResponseBytes (for tests).
	responseLimit int64
}

// timeout returns Timeout or its default.
func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// maxTags returns MaxTags or its default.
func (o Options) maxTags() int {
	if o.MaxTags > 0 {
		return o.MaxTags
	}
	return DefaultMaxTags
}

// connection is what the calls to one repository need: the options of
// go-containerregistry's remote calls and the scrubber of their errors.
// Close it when done.
type connection struct {
	remote    []remote.Option
	scrub     scrubber
	timeout   time.Duration
	transport *guardTransport
}

// close closes the idle connections of c's transport. Each connection
// has a transport of its own that nothing reuses after it: the
// connections it keeps for reuse would otherwise stay open, each with a
// socket and its goroutines, until the idle timeout (security row 44).
func (c *connection) close() { c.transport.CloseIdleConnections() }

// connect prepares the calls to repo: the transport of the TLS and proxy
// settings, bounded by guardTransport, and the credentials of repo's
// registry. Faulty settings are *InvalidSpecErrors.
func (o Options) connect(ctx context.Context, repo name.Repository) (*connection, error) {
	c := &connection{timeout: o.timeout()}
	if o.Proxy != nil {
		pass, _ := o.Proxy.User.Password()
		c.scrub.add(pass)
	}
	base, err := o.transport()
	if err != nil {
		return nil, err
	}
	auth, err := o.authenticator(ctx, repo, &c.scrub)
	if err != nil {
		return nil, err
	}
	pageSize := o.PageSize
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	c.transport = base
	c.remote = []remote.Option{remote.WithContext(ctx), remote.WithTransport(base), remote.WithAuth(auth),
		remote.WithPageSize(pageSize), remote.WithUserAgent("windlass-image-reflector")}
	return c, nil
}

// transport returns the HTTP transport of o's TLS and proxy settings,
// bounded by guardTransport.
func (o Options) transport() (*guardTransport, error) {
	var certData map[string][]byte
	if len(o.CA)+len(o.ClientCert)+len(o.ClientKey) > 0 {
		certData = map[string][]byte{httptransport.KeyCA: o.CA,
			httptransport.KeyClientCert: o.ClientCert, httptransport.KeyClientKey: o.ClientKey}
	}
	tlsConfig, err := httptransport.TLSConfig(certData)
	if err != nil {
		return nil, invalidSpec("certSecretRef", err)
	}
	limit := o.responseLimit
	if limit <= 0 {
		limit = MaxResponseBytes
	}
	return &guardTransport{next: httptransport.New(tlsConfig, o.Proxy), insecure: o.Insecure, limit: limit}, nil
}

// authenticator returns the credentials of repo's registry in
// DockerConfigs (anonymous without an entry) and records them in scrub.
func (o Options) authenticator(ctx context.Context, repo name.Repository, scrub *scrubber) (authn.Authenticator, error) {
	var configs [][]byte
	for _, c := range o.DockerConfigs {
		if len(c) > 0 {
			configs = append(configs, c)
		}
	}
	if len(configs) == 0 {
		return authn.Anonymous, nil
	}
	kc, err := oci.KeychainFromDockerConfigs(configs...)
	if err != nil {
		return nil, invalidSpec("secretRef", err)
	}
	resolved, err := authn.Resolve(ctx, kc, repo)
	if err != nil {
		return nil, invalidSpec("secretRef", errors.New("the credentials of "+repo.RegistryStr()+" cannot be read"))
	}
	cfg, err := authn.Authorization(ctx, resolved)
	if err != nil {
		return nil, invalidSpec("secretRef", errors.New("the credentials of "+repo.RegistryStr()+" cannot be read"))
	}
	if *cfg == (authn.AuthConfig{}) {
		return authn.Anonymous, nil
	}
	scrub.add(cfg.Auth, cfg.IdentityToken, cfg.RegistryToken)
	scrub.addBasic(cfg.Username, cfg.Password)
	return authn.FromConfig(*cfg), nil
}

// guardTransport bounds what a registry can make a scan do:
//   - plain HTTP only with Insecure, or to a loopback address (traffic
//     that never leaves the machine);
//   - a redirect never goes from HTTPS down to HTTP, and a redirected
//     request to another host (or port) carries no Authorization or
//     Cookie header, whatever the layers above copied;
//   - every response body is cut at limit bytes with an error, so that no
//     registry can stream forever or fill the memory with one page.
type guardTransport struct {
	next     http.RoundTripper
	insecure bool
	limit    int64
}

// RoundTrip implements http.RoundTripper.
func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure && !isLoopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("refusing plain HTTP to %s: set insecure to allow it", req.URL.Host)
	}
	if prev := req.Response; prev != nil && prev.Request != nil {
		from := prev.Request.URL
		if from.Scheme == "https" && req.URL.Scheme != "https" {
			return nil, fmt.Errorf("refusing a redirect from https://%s to plain HTTP", from.Host)
		}
		if hostPort(from) != hostPort(req.URL) {
			req = req.Clone(req.Context())
			req.Header.Del("Authorization")
			req.Header.Del("Cookie")
		}
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := httptransport.LimitBody(resp, g.limit); err != nil {
		return nil, err
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport
// underneath.
func (g *guardTransport) CloseIdleConnections() {
	if c, ok := g.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// isLoopback tells whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostPort returns the lower-cased host of u with its port, the scheme's
// default port when u names none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
