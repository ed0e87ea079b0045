package cli

import (
	"net/http"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/windlass-dev/windlass/internal/kubeauth"
)

// The image reflector serves the tags of an ImageRepository to callers
// whose bearer token the API server authenticates as one who may get it.
// `windlass image tags` sends the token of the kubeconfig: through the API
// server's proxy, which drops the Authorization header of what it
// proxies, in kubeauth.ProxiedAuthorizationHeader; to --address, in
// Authorization. A kubeconfig that authenticates with a client
// certificate has no token to send: such a caller is refused, and told so.

// bearerCopier copies a bearer Authorization header, set by the
// kubeconfig's credentials, into kubeauth.ProxiedAuthorizationHeader.
type bearerCopier struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (b bearerCopier) RoundTrip(r *http.Request) (*http.Response, error) {
	if auth := r.Header.Get("Authorization"); isBearer(auth) {
		r = r.Clone(r.Context())
		r.Header.Set(kubeauth.ProxiedAuthorizationHeader, auth)
	}
	return b.next.RoundTrip(r)
}

func isBearer(auth string) bool {
	scheme, _, _ := strings.Cut(auth, " ")
	return strings.EqualFold(scheme, "Bearer")
}

// directTagsClient returns the client that asks --address for the tags,
// with the bearer token of the kubeconfig when it has one (none without a
// kubeconfig: the image reflector may serve anyone, with
// --insecure-image-tags).
func (f *imageFlags) directTagsClient() (*http.Client, error) {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return &http.Client{}, nil
	}
	creds := &rest.Config{Host: cfg.Host, BearerToken: cfg.BearerToken, BearerTokenFile: cfg.BearerTokenFile,
		ExecProvider: cfg.ExecProvider, AuthProvider: cfg.AuthProvider, AuthConfigPersister: cfg.AuthConfigPersister}
	rt, err := rest.HTTPWrappersForConfig(creds, http.DefaultTransport)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt}, nil
}
