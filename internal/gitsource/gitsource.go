// Package gitsource turns what a GitRepository declares into the settings
// of a git client: the credentials of its secretRef and proxySecretRef,
// and the checkout options of a reference. The GitRepository controller
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
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/secret"
)

// Credentials reads the Secrets of obj's spec.secretRef and
// spec.proxySecretRef for the URL u. A Secret that does not exist yet is a
// failure to retry (reconcile.Fail); a Secret with unusable content is a
// spec error (reconcile.Stall). Both have the reason
// AuthenticationFailed.
func Credentials(ctx context.Context, c client.Reader, obj *sourcev1.GitRepository, u url.URL) (*git.AuthOptions, *git.ProxyOptions, error) {
	var data map[string][]byte
	if obj.Spec.SecretRef != nil {
		d, err := secret.Data(ctx, c, obj.Namespace, obj.Spec.SecretRef.Name)
		if err != nil {
			return nil, nil, reconcile.Fail(sourcev1.AuthenticationFailedReason, err)
		}
		data = d
	}
	auth, err := git.NewAuthOptions(u, data)
	if err != nil {
		name := ""
		if obj.Spec.SecretRef != nil {
			name = obj.Spec.SecretRef.Name
		}
		return nil, nil, reconcile.Stall(sourcev1.AuthenticationFailedReason,
			fmt.Errorf("invalid credentials in secret '%s': %w", name, err))
	}
	if obj.Spec.ProxySecretRef == nil {
		return auth, nil, nil
	}
	proxyData, err := secret.Data(ctx, c, obj.Namespace, obj.Spec.ProxySecretRef.Name)
	if err != nil {
		return nil, nil, reconcile.Fail(sourcev1.AuthenticationFailedReason, err)
	}
	proxy, err := git.NewProxyOptions(proxyData)
	if err != nil {
		return nil, nil, reconcile.Stall(sourcev1.AuthenticationFailedReason,
			fmt.Errorf("invalid proxy secret '%s': %w", obj.Spec.ProxySecretRef.Name, err))
	}
	return auth, proxy, nil
}

// CheckoutOptions returns the checkout options of ref (nil checks out the
// git package's default branch).
func CheckoutOptions(ref *sourcev1.GitRepositoryRef) git.CheckoutOptions {
	if ref == nil {
		return git.CheckoutOptions{}
	}
	return git.CheckoutOptions{Branch: ref.Branch, Tag: ref.Tag, SemVer: ref.SemVer, RefName: ref.Name, Commit: ref.Commit}
}
