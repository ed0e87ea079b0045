package git

import (
	"context"
	"errors"
)

// LsRemote lists the references of the repository at rawURL, with the
// Client's credentials, in one request: the full reference names
// (refs/heads/main, refs/tags/v1) with the hashes they point at, and each
// annotated tag peeled too, as "<ref>^{}". It is how a caller tells that
// nothing moved without cloning. The transfer is bounded by the default
// transfer limit, the connections by ctx; errors never contain
// credentials. A Client that has cloned cannot list.
func (c *Client) LsRemote(ctx context.Context, rawURL string) (map[string]string, error) {
	if c.closed {
		return nil, errors.New("git client is closed")
	}
	if c.cloned {
		return nil, errors.New("git client has already cloned into its work directory")
	}
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
