package gitsource

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/githubapp"
	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// CheckProvider stalls a GitRepository whose spec.provider or
// spec.serviceAccountName Windlass does not serve: azure and aws need a
// cloud workload identity, and spec.serviceAccountName is for those two
// only. The reason is UnsupportedProvider, as on the other kinds.
func CheckProvider(obj *sourcev1.GitRepository) error {
	sa := obj.Spec.ServiceAccountName
	switch p := obj.Spec.Provider; p {
	case "", sourcev1.GitProviderGeneric, sourcev1.GitProviderGitHub:
	default:
		what := fmt.Sprintf("provider '%s'", p)
		if sa != "" {
			what += fmt.Sprintf(" with spec.serviceAccountName '%s'", sa)
		}
		return outcome.Stall(meta.UnsupportedProviderReason, fmt.Errorf(
			"%s is not served by Windlass (it needs a cloud workload identity): use provider generic with spec.secretRef, or github with a GitHub App", what))
	}
	// The CRD schema allows spec.serviceAccountName with azure and aws only;
	// this catches an object stored under an older schema.
	if sa != "" {
		return outcome.Stall(meta.UnsupportedProviderReason, fmt.Errorf(
			"spec.serviceAccountName '%s' is not served by Windlass: only the azure and aws providers use it, and Windlass serves neither", sa))
	}
	return nil
}

// conflictingKeys are the Secret keys of credentials that provider github
// replaces with the app's installation token.
var conflictingKeys = []string{git.SecretKeyUsername, git.SecretKeyPassword, git.SecretKeyBearerToken, git.SecretKeyIdentity}

// GitHubAuth returns the credentials of a GitRepository with provider
// github: the installation token of the GitHub App in data (the Secret of
// spec.secretRef; see githubapp.FromSecret) as the basic auth password of
// githubapp.AccessTokenUsername, with the Secret's TLS keys (ca.crt,
// tls.crt, tls.key), which also apply to the API. The token request goes
// through the proxy of proxyData, when set. Missing or invalid keys stall;
// a refused or failed token request is retried.
func GitHubAuth(ctx context.Context, obj *sourcev1.GitRepository, u url.URL, data, proxyData map[string][]byte, opts Options) (*git.AuthOptions, error) {
	if obj.Spec.SecretRef == nil {
		return nil, outcome.Stall(sourcev1.InvalidProviderConfigurationReason, fmt.Errorf(
			"provider github needs spec.secretRef: a Secret with %s, %s and %s",
			githubapp.KeyAppID, githubapp.KeyInstallationID, githubapp.KeyPrivateKey))
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, outcome.Stall(sourcev1.InvalidProviderConfigurationReason, fmt.Errorf(
			"provider github clones over HTTPS with a token: spec.url '%s' is not an https URL", git.SanitizeURL(obj.Spec.URL)))
	}
	name := obj.Spec.SecretRef.Name
	app, err := githubapp.FromSecret(data)
	if err != nil {
		return nil, outcome.Stall(sourcev1.AuthenticationFailedReason, fmt.Errorf("invalid GitHub App secret '%s': %w", name, err))
	}
	for _, k := range conflictingKeys {
		if len(data[k]) > 0 {
			return nil, outcome.Stall(sourcev1.AuthenticationFailedReason, fmt.Errorf(
				"invalid GitHub App secret '%s': '%s' cannot be combined with provider github, which authenticates with the app's token", name, k))
		}
	}
	if app.Insecure() && !opts.AllowInsecureHTTP {
		return nil, outcome.Stall(meta.InsecureConnectionsDisallowedReason, fmt.Errorf(
			"'%s' of secret '%s' is plain HTTP, which the controller refuses (--insecure-allow-http=false)", githubapp.KeyBaseURL, name))
	}
	auth, err := git.NewAuthOptions(u, data)
	if err != nil {
		return nil, outcome.Stall(sourcev1.AuthenticationFailedReason, fmt.Errorf("invalid credentials in secret '%s': %w", name, err))
	}
	transport, err := apiTransport(data, proxyData)
	if err != nil {
		return nil, outcome.Stall(sourcev1.AuthenticationFailedReason, fmt.Errorf("invalid secret '%s': %w", name, err))
	}
	defer transport.CloseIdleConnections()
	tokens := opts.Tokens
	if tokens == nil {
		tokens = githubapp.Shared
	}
	token, err := tokens.Token(ctx, app, &http.Client{Transport: transport})
	if err != nil {
		return nil, outcome.Fail(sourcev1.AuthenticationFailedReason, fmt.Errorf("GitHub App of secret '%s': %w", name, err))
	}
	auth.Username, auth.Password = githubapp.AccessTokenUsername, token
	return auth, nil
}

// apiTransport returns the transport to the GitHub API: the TLS keys of
// the Secret, and the proxy of proxyData.
func apiTransport(data, proxyData map[string][]byte) (*http.Transport, error) {
	tlsData := map[string][]byte{}
	for _, k := range []string{httptransport.KeyCA, httptransport.KeyClientCert, httptransport.KeyClientKey} {
		if len(data[k]) > 0 {
			tlsData[k] = data[k]
		}
	}
	if len(tlsData[httptransport.KeyCA]) == 0 && len(data[git.SecretKeyCAFile]) > 0 {
		tlsData[httptransport.KeyCA] = data[git.SecretKeyCAFile]
	}
	if len(tlsData) == 0 {
		tlsData = nil
	}
	tlsConfig, err := httptransport.TLSConfig(tlsData)
	if err != nil {
		return nil, err
	}
	proxy, err := httptransport.ProxyURL(proxyData)
	if err != nil {
		return nil, err
	}
	return httptransport.New(tlsConfig, proxy), nil
}
