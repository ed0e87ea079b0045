// Package oci stores source trees as OCI artifacts in container registries
// and reads them back: Push packs a folder as a reproducible tar.gz layer
// (internal/archive) with the GitOps Toolkit media types and annotations,
// Pull extracts an artifact's layer into a folder with the limits of
// archive.Extract, Tag adds a tag to an artifact and List describes the
// artifacts of a repository.
//
// For the OCIRepository source controller, the steps of a pull are also
// exported one by one, so that nothing is downloaded when the digest has
// not changed: Resolve (a HEAD request for a tag's digest), LatestSemverTag
// and SelectSemverTag (a tag by semver range), GetManifest (a size-limited
// image manifest), SelectLayer and OpenLayer (a streamed blob, checked
// against its size and digest). KeychainFromDockerConfigs reads the
// credentials of kubernetes.io/dockerconfigjson Secrets.
//
// The wire format is the one of the GitOps Toolkit CLI (RFC-0003), so that
// artifacts pushed by either tool are read by the other: an OCI image
// manifest whose config has the media type ConfigMediaType, one layer of
// media type ContentMediaType, and the annotations AnnotationCreated,
// AnnotationSource and AnnotationRevision on the manifest.
package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/windlass-dev/windlass/api/meta"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of the artifacts.
const (
	// ConfigMediaType is the media type of an artifact's config blob.
	ConfigMediaType types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	// ContentMediaType is the media type of the layer that holds the
	// tar.gz of the source tree.
	ContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// Annotation keys of an artifact's manifest.
const (
	// AnnotationCreated is when the artifact was made (RFC 3339).
	AnnotationCreated = "org.opencontainers.image.created"
	// AnnotationSource is the URL of the source the artifact was made
	// from, a Git repository for instance.
	AnnotationSource = meta.OriginSourceKey
	// AnnotationRevision is the revision of the source, such as
	// "main@sha1:<hex>".
	AnnotationRevision = meta.OriginRevisionKey
)

// Scheme is the prefix of artifact URLs.
const Scheme = "oci://"

// Options say how to reach a registry.
type Options struct {
	// Username and Password, when Username is set, are sent to the
	// registry; otherwise the credentials come from Keychain.
	Username, Password string
	// Keychain gives credentials when Username is empty; nil means
	// authn.DefaultKeychain (the docker config of the user).
	// KeychainFromDockerConfigs makes one from Kubernetes Secrets.
	Keychain authn.Keychain
	// Insecure allows plain HTTP.
	Insecure bool
	// UserAgent is sent with every request.
	UserAgent string
	// CredentialsHint says where the credentials come from, in the error
	// of a registry that refuses them; empty means the CLI's "check --creds
	// or run docker login".
	CredentialsHint string
	// Transport is the base HTTP transport of every request: the TLS
	// configuration (a private CA, a client certificate) and the proxy.
	// nil means go-containerregistry's remote.DefaultTransport.
	Transport http.RoundTripper

	// auth, when set, is the authenticator resolved for one repository by
	// withAuth; secrets are the credentials it holds, hidden from errors.
	auth    authn.Authenticator
	secrets []string
}

// ParseCredentials splits "USER:PASSWORD" into Username and Password.
func (o *Options) ParseCredentials(creds string) error {
	user, pass, ok := strings.Cut(creds, ":")
	if !ok || user == "" || pass == "" {
		return errors.New("--creds must be USER:PASSWORD")
	}
	o.Username, o.Password = user, pass
	return nil
}

// remote returns the options of go-containerregistry's remote calls.
func (o Options) remote(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx)}
	if o.UserAgent != "" {
		opts = append(opts, remote.WithUserAgent(o.UserAgent))
	}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	if o.auth != nil {
		return append(opts, remote.WithAuth(o.auth))
	}
	if o.Username != "" {
		return append(opts, remote.WithAuth(&authn.Basic{Username: o.Username, Password: o.Password}))
	}
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	return append(opts, remote.WithAuthFromKeychain(kc))
}

// nameOptions returns the options of reference parsing.
func (o Options) nameOptions() []name.Option {
	opts := []name.Option{name.StrictValidation}
	if o.Insecure {
		opts = append(opts, name.Insecure)
	}
	return opts
}

// ParseReference parses an artifact URL, oci://HOST/REPO:TAG or
// oci://HOST/REPO@sha256:HEX.
func ParseReference(url string, o Options) (name.Reference, error) {
	s, err := trimScheme(url)
	if err != nil {
		return nil, err
	}
	if t, err := name.NewTag(s, o.nameOptions()...); err == nil {
		return t, nil
	}
	d, err := name.NewDigest(s, o.nameOptions()...)
	if err != nil {
		return nil, fmt.Errorf("%q is not an artifact URL: write oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:DIGEST", url)
	}
	return d, nil
}

// ParseTag parses an artifact URL that names a tag, oci://HOST/REPO:TAG.
func ParseTag(url string, o Options) (name.Tag, error) {
	s, err := trimScheme(url)
	if err != nil {
		return name.Tag{}, err
	}
	t, err := name.NewTag(s, o.nameOptions()...)
	if err != nil {
		return name.Tag{}, fmt.Errorf("%q is not an artifact URL with a tag: write oci://HOST/REPOSITORY:TAG", url)
	}
	return t, nil
}

// ParseRepository parses a repository URL, oci://HOST/REPO.
func ParseRepository(url string, o Options) (name.Repository, error) {
	s, err := trimScheme(url)
	if err != nil {
		return name.Repository{}, err
	}
	r, err := name.NewRepository(s, o.nameOptions()...)
	if err != nil || !strings.Contains(s, "/") {
		return name.Repository{}, fmt.Errorf("%q is not a repository URL: write oci://HOST/REPOSITORY, without a tag", url)
	}
	return r, nil
}

// trimScheme removes the oci:// prefix, which is required.
func trimScheme(url string) (string, error) {
	s, ok := strings.CutPrefix(url, Scheme)
	if !ok {
		return "", fmt.Errorf("%q does not start with %s: write %sHOST/REPOSITORY", url, Scheme, Scheme)
	}
	return s, nil
}

// URL returns the oci:// URL of a reference or a repository.
func URL(ref interface{ Name() string }) string {
	return Scheme + ref.Name()
}

// ErrAccessDenied is wrapped by the errors of registry calls that the
// registry answered with 401 Unauthorized or 403 Forbidden.
var ErrAccessDenied = errors.New("access denied")

// registryError rewrites an error of a registry call as one line that says
// what failed and what to check, never holding the password. It wraps
// ErrAccessDenied when the registry refused the credentials.
func (o Options) registryError(what string, err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) && (terr.StatusCode == 401 || terr.StatusCode == 403) {
		return &accessDeniedError{msg: what + ": " + o.describe(err)}
	}
	return fmt.Errorf("%s: %s", what, o.describe(err))
}

// accessDeniedError is a registry error that wraps ErrAccessDenied.
type accessDeniedError struct{ msg string }

func (e *accessDeniedError) Error() string { return e.msg }
func (e *accessDeniedError) Unwrap() error { return ErrAccessDenied }

// describe returns the first line of err's message, a hint for the HTTP
// errors users can fix, and never a credential: neither the password nor
// any credential resolved from the keychain, nor what looks like one
// (see redact).
func (o Options) describe(err error) string {
	msg := err.Error()
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case 401:
			msg = "the registry refused the credentials (401 Unauthorized): " + o.credentialsHint()
		case 403:
			msg = "the registry denied access (403 Forbidden): check that the credentials may do this"
		case 404:
			msg = "not found (404): check the repository and the tag"
		}
	}
	line, _, _ := strings.Cut(msg, "\n")
	return redact(line, o.credentials()...)
}

// credentialsHint returns what to check when the registry refuses the
// credentials.
func (o Options) credentialsHint() string {
	if o.CredentialsHint != "" {
		return o.CredentialsHint
	}
	return "check --creds or run docker login"
}

// credentials returns the secrets describe hides: the password, its
// base64 form in a basic Authorization header, those resolved from the
// keychain by withAuth, and all those of a keychain made by
// KeychainFromDockerConfigs.
func (o Options) credentials() []string {
	secrets := append([]string(nil), o.secrets...)
	if kc, ok := o.Keychain.(*dockerConfigKeychain); ok {
		secrets = append(secrets, kc.secrets...)
	}
	if o.Password != "" {
		secrets = append(secrets, o.Password, basicAuth(o.Username, o.Password))
	}
	return secrets
}
