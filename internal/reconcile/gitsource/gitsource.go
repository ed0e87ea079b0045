// Package gitsource turns what a GitRepository declares into the settings
// of a git client: the credentials of its secretRef and proxySecretRef (a
// GitHub App installation token with provider github), and the checkout
// options of a reference. The GitRepository controller
// clones with them, and image update automation pushes with them, so that
// both reach the repository in the same way.
package gitsource

import (
	"context"
	"fmt"
	"net/url"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/githubapp"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/secret"
)

// Options tune how Credentials reaches the GitHub API.
type Options struct {
	// AllowInsecureHTTP lets a GitHub App's token request go to a plain-HTTP
	// githubAppBaseURL; without it such a base URL stalls.
	AllowInsecureHTTP bool
	// Tokens caches GitHub App installation tokens; nil is
	// githubapp.Shared.
	Tokens *githubapp.Cache
}

// CredentialsWith reads the Secrets of obj's spec.secretRef and
// spec.proxySecretRef for the URL u; with provider github it exchanges the
// app's credentials for an installation token (see GitHubAuth). A provider
// Windlass does not serve stalls (see CheckProvider). A Secret that does
// not exist yet and a refused token request are failures to retry
// (outcome.Fail); a Secret with unusable content is a spec error
// (outcome.Stall). Both have the reason AuthenticationFailed.
func CredentialsWith(ctx context.Context, c client.Reader, obj *sourcev1.GitRepository, u url.URL, opts Options) (*git.AuthOptions, *git.ProxyOptions, error) {
	if err := CheckProvider(obj); err != nil {
		return nil, nil, err
	}
	var data map[string][]byte
	if obj.Spec.SecretRef != nil {
		d, err := secret.Data(ctx, c, obj.Namespace, obj.Spec.SecretRef.Name)
		if err != nil {
			return nil, nil, outcome.Fail(sourcev1.AuthenticationFailedReason, err)
		}
		data = d
	}
	proxy, proxyData, err := proxyOptions(ctx, c, obj)
	if err != nil {
		return nil, nil, err
	}
	if obj.Spec.Provider == sourcev1.GitProviderGitHub {
		auth, err := GitHubAuth(ctx, obj, u, data, proxyData, opts)
		return auth, proxy, err
	}
	auth, err := git.NewAuthOptions(u, data)
	if err != nil {
		name := ""
		if obj.Spec.SecretRef != nil {
			name = obj.Spec.SecretRef.Name
		}
		return nil, nil, outcome.Stall(sourcev1.AuthenticationFailedReason,
			fmt.Errorf("invalid credentials in secret '%s': %w", name, err))
	}
	return auth, proxy, nil
}

// proxyOptions reads the Secret of obj's spec.proxySecretRef, if any, and
// returns the proxy with the Secret's data.
func proxyOptions(ctx context.Context, c client.Reader, obj *sourcev1.GitRepository) (*git.ProxyOptions, map[string][]byte, error) {
	if obj.Spec.ProxySecretRef == nil {
		return nil, nil, nil
	}
	proxyData, err := secret.Data(ctx, c, obj.Namespace, obj.Spec.ProxySecretRef.Name)
	if err != nil {
		return nil, nil, outcome.Fail(sourcev1.AuthenticationFailedReason, err)
	}
	proxy, err := git.NewProxyOptions(proxyData)
	if err != nil {
		return nil, nil, outcome.Stall(sourcev1.AuthenticationFailedReason,
			fmt.Errorf("invalid proxy secret '%s': %w", obj.Spec.ProxySecretRef.Name, err))
	}
	return proxy, proxyData, nil
}

// CheckoutOptions returns the checkout options of ref (nil checks out the
// git package's default branch).
func CheckoutOptions(ref *sourcev1.GitRepositoryRef) git.CheckoutOptions {
	if ref == nil {
		return git.CheckoutOptions{}
	}
	return git.CheckoutOptions{Branch: ref.Branch, Tag: ref.Tag, SemVer: ref.SemVer, RefName: ref.Name, Commit: ref.Commit}
}
