package oci

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// maxRedirects caps how many redirects a manifest or blob request follows.
const maxRedirects = 5

// retryStatusCodes are the HTTP statuses after which a request is retried
// (with go-containerregistry's short backoff).
var retryStatusCodes = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}

// withAuth returns o with the credentials for repo resolved once (from
// Username and Password, else from Keychain): the remote calls and the
// HTTP client use them, and describe hides every secret they hold.
func (o Options) withAuth(ctx context.Context, repo name.Repository) (Options, error) {
	if o.auth != nil {
		return o, nil
	}
	var auth authn.Authenticator = &authn.Basic{Username: o.Username, Password: o.Password}
	if o.Username == "" {
		kc := o.Keychain
		if kc == nil {
			kc = authn.DefaultKeychain
		}
		var err error
		if auth, err = authn.Resolve(ctx, kc, repo); err != nil {
			return o, o.registryError("finding the credentials for "+URL(repo), err)
		}
	}
	cfg, err := authn.Authorization(ctx, auth)
	if err != nil {
		return o, o.registryError("reading the credentials for "+URL(repo), err)
	}
	o.secrets = append(o.secrets, nonEmpty(cfg.Password, cfg.Auth, cfg.IdentityToken, cfg.RegistryToken)...)
	if cfg.Password != "" {
		o.secrets = append(o.secrets, basicAuth(cfg.Username, cfg.Password))
	}
	o.auth = authn.FromConfig(*cfg)
	if *cfg == (authn.AuthConfig{}) {
		o.auth = authn.Anonymous
	}
	return o, nil
}

// client returns an HTTP client that reads from repo's registry: o's base
// transport with retries of transient failures, the credentials resolved
// by withAuth (sent to the registry's host only, never to a host it
// redirects to) and the redirect policy of checkRedirect.
func (o Options) client(ctx context.Context, repo name.Repository) (*http.Client, error) {
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	base = transport.NewRetry(base, transport.WithRetryStatusCodes(retryStatusCodes...))
	if o.UserAgent != "" {
		base = transport.NewUserAgent(base, o.UserAgent)
	}
	auth := o.auth
	if auth == nil {
		auth = authn.Anonymous
	}
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, base, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, o.registryError("connecting to the registry of "+URL(repo), err)
	}
	return &http.Client{Transport: rt, CheckRedirect: checkRedirect}, nil
}

// checkRedirect follows at most maxRedirects redirects, never from HTTPS
// down to plain HTTP, and never from a public host to a loopback, private
// or link-local address (a registry must not make Windlass reach into its
// own network).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	origin := via[0].URL
	if origin.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("refusing a redirect from https://%s to plain HTTP", origin.Host)
	}
	to := req.URL.Hostname()
	if to != origin.Hostname() && isInternal(to) && !isInternal(origin.Hostname()) {
		return fmt.Errorf("refusing a redirect from %s to the internal address %s", origin.Host, to)
	}
	return nil
}

// isInternal tells whether host is an IP address of a loopback, private,
// link-local or unspecified network. Host names are not resolved.
func isInternal(host string) bool {
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() ||
		addr.IsLinkLocalMulticast() || addr.IsUnspecified()
}

// endpoint returns the URL of a manifest or blob ("manifests" or "blobs")
// of repo. The scheme is rewritten by the client after its ping.
func endpoint(repo name.Repository, kind, id string) string {
	u := url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/" + kind + "/" + id}
	return u.String()
}

// basicAuth returns the base64 of "user:pass" as sent in a basic
// Authorization header.
func basicAuth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// nonEmpty returns the non-empty strings of values.
func nonEmpty(values ...string) []string {
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Patterns of credentials that redact removes from error messages.
var (
	authHeaderPattern = regexp.MustCompile(`(?i)\b(basic|bearer)\s+[A-Za-z0-9._~+/=-]+`)
	jsonSecretPattern = regexp.MustCompile(
		`(?i)"(password|secret|token|access_token|refresh_token|identitytoken|registrytoken|auth)"\s*:\s*"[^"]*"`)
	urlPattern = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)
)

// paginationParams are the query parameters of registry URLs that redact
// keeps: they hold no credential.
var paginationParams = map[string]bool{"n": true, "last": true}

// redact returns msg without the given secrets, Authorization header
// values, secret fields of JSON bodies, and the user information and query
// values (a presigned URL's signature) of URLs.
func redact(msg string, secrets ...string) string {
	sorted := nonEmpty(secrets...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, s := range sorted {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	msg = authHeaderPattern.ReplaceAllString(msg, "$1 ***")
	msg = jsonSecretPattern.ReplaceAllString(msg, `"$1":"***"`)
	return urlPattern.ReplaceAllStringFunc(msg, redactURL)
}

// redactURL drops the user information of a URL and the values of its
// query parameters other than pagination; the punctuation that follows a
// URL in a message is kept as it is.
func redactURL(match string) string {
	raw := strings.TrimRight(match, ":,.;)")
	return cleanURL(raw) + match[len(raw):]
}

// cleanURL drops the user information and the non-pagination query values
// of raw.
func cleanURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<URL>"
	}
	u.User = nil
	if u.RawQuery == "" {
		return u.String()
	}
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	params := make([]string, 0, len(keys))
	for _, k := range keys {
		v := "***"
		if paginationParams[k] {
			v = url.QueryEscape(q.Get(k))
		}
		params = append(params, url.QueryEscape(k)+"="+v)
	}
	u.RawQuery = ""
	return u.String() + "?" + strings.Join(params, "&")
}
