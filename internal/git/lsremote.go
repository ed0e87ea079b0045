package git

import (
	"context"
)

// LsRemote lists the references of the repository at rawURL, with auth
// and through proxy (both may be nil), in one request: the full reference
// names (refs/heads/main, refs/tags/v1) with the hashes they point at, and
// each annotated tag peeled too, as "<ref>^{}". It is how a caller tells
// that nothing moved without cloning, and it needs no work directory. The
// transfer is bounded by the default transfer limit, the connections by
// ctx; errors never contain credentials, and bad SSH credentials are an
// [*InvalidAuthError].
func LsRemote(ctx context.Context, rawURL string, auth *AuthOptions, proxy *ProxyOptions) (map[string]string, error) {
	c, err := newRemoteClient(auth, proxy)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.ctx = ctx
	c.limits = newCloneLimits(CheckoutOptions{})
	defer c.endOperation()
	r, err := c.newRemote(rawURL)
	if err != nil {
		return nil, SanitizeError(err, c.secrets()...)
	}
	refs, err := c.lsRemote(ctx, r)
	if err != nil {
		return nil, SanitizeError(err, c.secrets()...)
	}
	return refs, nil
}
