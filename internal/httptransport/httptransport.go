// Package httptransport builds the HTTP transports with which the source
// kinds reach registries and object storage: TLS settings from the Secret
// of a certSecretRef (ca.crt, tls.crt, tls.key) and a proxy from the Secret
// of a proxySecretRef (address, username, password). The errors name the
// Secret key at fault, never a value. LimitBody bounds what a response may
// make the process read.
package httptransport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Keys of a certSecretRef Secret.
const (
	KeyCA         = "ca.crt"
	KeyClientCert = "tls.crt"
	KeyClientKey  = "tls.key"
)

// Keys of a proxySecretRef Secret.
const (
	KeyProxyAddress  = "address"
	KeyProxyUsername = "username"
	KeyProxyPassword = "password"
)

// TLSConfig returns the TLS settings of a certSecretRef Secret: the system
// CAs plus ca.crt, and the client certificate tls.crt with its key
// tls.key. It returns nil for nil data.
func TLSConfig(data map[string][]byte) (*tls.Config, error) {
	if data == nil {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := data[KeyCA]; len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("'ca.crt' holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	cert, key := data[KeyClientCert], data[KeyClientKey]
	switch {
	case len(cert) > 0 && len(key) == 0:
		return nil, errors.New("'tls.crt' is set but 'tls.key' is missing")
	case len(cert) == 0 && len(key) > 0:
		return nil, errors.New("'tls.key' is set but 'tls.crt' is missing")
	case len(cert) > 0:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, errors.New("'tls.crt' and 'tls.key' are not a valid PEM key pair")
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if cfg.RootCAs == nil && cfg.Certificates == nil {
		return nil, errors.New("the secret has none of 'ca.crt', 'tls.crt' and 'tls.key'")
	}
	return cfg, nil
}

// ProxyURL returns the proxy of a proxySecretRef Secret, with its username
// and password, or nil for nil data.
func ProxyURL(data map[string][]byte) (*url.URL, error) {
	if data == nil {
		return nil, nil
	}
	address := string(data[KeyProxyAddress])
	if address == "" {
		return nil, errors.New("the proxy secret has no 'address'")
	}
	u, err := url.Parse(address)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, errors.New("the proxy 'address' is not a URL with a scheme and a host")
	}
	user, pass := string(data[KeyProxyUsername]), string(data[KeyProxyPassword])
	switch {
	case user != "" && pass != "":
		u.User = url.UserPassword(user, pass)
	case user != "" || pass != "":
		return nil, errors.New("the proxy secret needs both 'username' and 'password', or neither")
	}
	return u, nil
}

// New returns a transport like http.DefaultTransport with the TLS
// settings and the proxy given; either may be nil: the defaults, and the
// proxy of the environment (HTTPS_PROXY, NO_PROXY).
func New(tlsConfig *tls.Config, proxy *url.URL) *http.Transport {
	t := &http.Transport{
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		TLSClientConfig:       tlsConfig,
		Proxy:                 http.ProxyFromEnvironment,
	}
	if proxy != nil {
		t.Proxy = http.ProxyURL(proxy)
	}
	return t
}

// ResponseTooLargeError is a response whose body is longer than the most
// that is read of it.
type ResponseTooLargeError struct {
	// Limit is the most bytes read of the body.
	Limit int64
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the response is larger than %d bytes, the most that is read", e.Limit)
}

// LimitBody bounds the body of resp to limit bytes: a response that says
// it is longer is closed and refused at once, and a body that goes on
// past limit fails its next read with a *ResponseTooLargeError (not an
// io.EOF that would pass a cut document for a whole one).
func LimitBody(resp *http.Response, limit int64) error {
	if resp.ContentLength > limit {
		resp.Body.Close()
		return &ResponseTooLargeError{Limit: limit}
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: limit, limit: limit}
	return nil
}

// limitedBody is a response body that fails once more than limit bytes
// come.
type limitedBody struct {
	io.ReadCloser
	left, limit int64
}

// Read implements io.Reader.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var probe [1]byte
		n, err := b.ReadCloser.Read(probe[:])
		if n > 0 {
			// Closed here: a reader that stops at the error may never
			// close it, and the rest would keep the connection busy.
			b.ReadCloser.Close()
			return 0, &ResponseTooLargeError{Limit: b.limit}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
