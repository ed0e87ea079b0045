package git

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Transports a GitRepository URL may use. TransportFile exists for local
// testing only: the GitRepository API accepts http, https and ssh URLs.
const (
	TransportHTTP  = "http"
	TransportHTTPS = "https"
	TransportSSH   = "ssh"
	TransportFile  = "file"
)

// Keys of the Secret named by spec.secretRef.
const (
	SecretKeyUsername    = "username"
	SecretKeyPassword    = "password"
	SecretKeyBearerToken = "bearerToken"
	SecretKeyCACert      = "ca.crt"
	SecretKeyCAFile      = "caFile" // legacy name of ca.crt
	SecretKeyTLSCert     = "tls.crt"
	SecretKeyTLSKey      = "tls.key"
	SecretKeyIdentity    = "identity"
	SecretKeyKnownHosts  = "known_hosts"
)

// Keys of the Secret named by spec.proxySecretRef.
const (
	ProxyKeyAddress  = "address"
	ProxyKeyUsername = "username"
	ProxyKeyPassword = "password"
)

// AuthOptions are the credentials and transport settings for one remote.
//
// Basic auth and bearer tokens are also accepted over plain http: the
// GitRepository API allows it, but the credentials then cross the network in
// clear text. TLS settings (CAFile, ClientCert, ClientKey) apply to https
// only and are ignored for other transports.
type AuthOptions struct {
	// Transport is "http", "https" or "ssh", from the URL scheme.
	Transport string
	// Host is the host (and port, when the URL has one) the credentials are
	// for; a Client refuses to send them anywhere else.
	Host string
	// Username and Password are HTTP basic auth credentials. For SSH,
	// Password is the passphrase of Identity and the user comes from the URL
	// (default "git").
	Username, Password string
	// BearerToken is sent as an HTTP Authorization: Bearer header.
	BearerToken string
	// CAFile is a PEM bundle of CAs trusted in addition to the system pool.
	CAFile []byte
	// ClientCert and ClientKey are the PEM client certificate and key for
	// mutual TLS.
	ClientCert, ClientKey []byte
	// Identity is the PEM SSH private key.
	Identity []byte
	// KnownHosts is the known_hosts content that SSH host keys must match.
	KnownHosts []byte
}

// ProxyOptions is the proxy from the Secret named by spec.proxySecretRef.
type ProxyOptions struct {
	// URL is the proxy address (Secret key "address").
	URL string
	// Username and Password authenticate to the proxy.
	Username, Password string
}

// NewProxyOptions builds ProxyOptions from the data of the Secret named by
// spec.proxySecretRef. A missing or unparsable address is an
// [*InvalidAuthError].
func NewProxyOptions(data map[string][]byte) (*ProxyOptions, error) {
	p := &ProxyOptions{
		URL:      string(data[ProxyKeyAddress]),
		Username: string(data[ProxyKeyUsername]),
		Password: string(data[ProxyKeyPassword]),
	}
	if p.URL == "" {
		return nil, &InvalidAuthError{Reason: "proxy secret has no 'address'"}
	}
	u, err := url.Parse(p.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, &InvalidAuthError{Reason: "proxy 'address' is not a URL with a scheme and a host"}
	}
	return p, nil
}

// NewAuthOptions builds AuthOptions from a URL and the data of the Secret
// named by spec.secretRef; data is nil when there is no secretRef.
//
// Recognised keys: username, password, bearerToken, ca.crt (or the legacy
// caFile), tls.crt, tls.key, identity, known_hosts. Invalid combinations are
// an [*InvalidAuthError]:
//   - username without password or password without username (http/https);
//   - bearerToken together with username or password;
//   - tls.crt without tls.key or the reverse, and PEM that does not parse;
//   - an ssh URL without identity and known_hosts (known_hosts is required:
//     this package never accepts an unknown host key), an identity that does
//     not parse or whose passphrase is wrong, known_hosts without any entry;
//   - a scheme other than http, https, ssh (and file, without credentials).
func NewAuthOptions(u url.URL, data map[string][]byte) (*AuthOptions, error) {
	opts := &AuthOptions{Transport: strings.ToLower(u.Scheme), Host: u.Host}
	if opts.Host == "" && opts.Transport != TransportFile {
		return nil, &InvalidAuthError{Reason: "URL has no host"}
	}
	switch opts.Transport {
	case TransportHTTP, TransportHTTPS:
		return opts, opts.fillHTTP(data)
	case TransportSSH:
		return opts, opts.fillSSH(data)
	case TransportFile:
		if hasAny(data, SecretKeyUsername, SecretKeyPassword, SecretKeyBearerToken, SecretKeyIdentity) {
			return nil, &InvalidAuthError{Reason: "the file transport takes no credentials"}
		}
		return opts, nil
	}
	return nil, &InvalidAuthError{Reason: fmt.Sprintf("unsupported URL scheme %q: use http, https or ssh", u.Scheme)}
}

// fillHTTP reads and checks the http and https keys.
func (o *AuthOptions) fillHTTP(data map[string][]byte) error {
	o.Username = string(data[SecretKeyUsername])
	o.Password = string(data[SecretKeyPassword])
	o.BearerToken = string(data[SecretKeyBearerToken])
	switch {
	case o.Username != "" && o.Password == "":
		return &InvalidAuthError{Reason: "'username' is set but 'password' is missing"}
	case o.Username == "" && o.Password != "":
		return &InvalidAuthError{Reason: "'password' is set but 'username' is missing"}
	case o.BearerToken != "" && o.Username != "":
		return &InvalidAuthError{Reason: "'bearerToken' cannot be combined with 'username' and 'password'"}
	}
	if o.Transport != TransportHTTPS {
		return nil
	}
	return o.fillTLS(data)
}

// fillTLS reads and checks the CA bundle and the client key pair.
func (o *AuthOptions) fillTLS(data map[string][]byte) error {
	o.CAFile = data[SecretKeyCACert]
	if len(o.CAFile) == 0 {
		o.CAFile = data[SecretKeyCAFile]
	}
	if len(o.CAFile) > 0 && !x509.NewCertPool().AppendCertsFromPEM(o.CAFile) {
		return &InvalidAuthError{Reason: "'ca.crt' holds no PEM certificate"}
	}
	o.ClientCert, o.ClientKey = data[SecretKeyTLSCert], data[SecretKeyTLSKey]
	switch {
	case len(o.ClientCert) > 0 && len(o.ClientKey) == 0:
		return &InvalidAuthError{Reason: "'tls.crt' is set but 'tls.key' is missing"}
	case len(o.ClientCert) == 0 && len(o.ClientKey) > 0:
		return &InvalidAuthError{Reason: "'tls.key' is set but 'tls.crt' is missing"}
	case len(o.ClientCert) > 0:
		if _, err := tls.X509KeyPair(o.ClientCert, o.ClientKey); err != nil {
			return &InvalidAuthError{Reason: "'tls.crt' and 'tls.key' are not a valid PEM key pair"}
		}
	}
	return nil
}

// fillSSH reads and checks the ssh keys.
func (o *AuthOptions) fillSSH(data map[string][]byte) error {
	o.Identity = data[SecretKeyIdentity]
	o.KnownHosts = data[SecretKeyKnownHosts]
	o.Password = string(data[SecretKeyPassword])
	if len(o.KnownHosts) == 0 {
		return &InvalidAuthError{Reason: "'known_hosts' is required for ssh"}
	}
	if len(o.Identity) == 0 {
		return &InvalidAuthError{Reason: "'identity' is required for ssh"}
	}
	if _, err := parseIdentity(o.Identity, o.Password); err != nil {
		return err
	}
	if _, err := parseKnownHosts(o.KnownHosts); err != nil {
		return &InvalidAuthError{Reason: "'known_hosts': " + err.Error()}
	}
	return nil
}

// parseIdentity parses an SSH private key, decrypting it with passphrase
// when it is encrypted.
func parseIdentity(pemBytes []byte, passphrase string) (ssh.Signer, error) {
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err == nil {
		return signer, nil
	}
	if _, missing := err.(*ssh.PassphraseMissingError); !missing {
		return nil, &InvalidAuthError{Reason: "'identity' is not a valid SSH private key"}
	}
	if passphrase == "" {
		return nil, &InvalidAuthError{Reason: "'identity' is encrypted and 'password' is missing"}
	}
	signer, err = ssh.ParsePrivateKeyWithPassphrase(pemBytes, []byte(passphrase))
	if err != nil {
		return nil, &InvalidAuthError{Reason: "'identity' cannot be decrypted with 'password'"}
	}
	return signer, nil
}

// hasAny reports whether data has a non-empty value under one of keys.
func hasAny(data map[string][]byte, keys ...string) bool {
	for _, k := range keys {
		if len(data[k]) > 0 {
			return true
		}
	}
	return false
}

// secrets lists the secret values to scrub from error text.
func (o *AuthOptions) secrets() []string {
	if o == nil {
		return nil
	}
	return []string{o.Password, o.BearerToken}
}
