package registry

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Digest returns the digest ("sha256:...") of the manifest that ref, an
// IMAGE:TAG reference, points to, for an ImagePolicy's
// digestReflectionPolicy. It asks with a HEAD request, which downloads
// nothing; a registry that answers HEAD without a digest, or with a
// status that says little, is asked again with a GET of the manifest
// (bounded by MaxResponseBytes). opts.Image is not used; the other
// options are those of Scan, and so are the errors.
func Digest(ctx context.Context, ref string, opts Options) (string, error) {
	tag, err := parseTag(ref, opts.Insecure)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()
	conn, err := opts.connect(ctx, tag.Context())
	if err != nil {
		return "", err
	}
	defer conn.close()
	what := "reading the digest of " + tag.Name()
	desc, err := remote.Head(tag, conn.remote...)
	if err != nil && worthGet(ctx, err) {
		var got *remote.Descriptor
		if got, err = remote.Get(tag, conn.remote...); err == nil {
			return got.Digest.String(), nil
		}
	}
	if err != nil {
		return "", conn.scrub.fail(what, err, conn.timeout)
	}
	return desc.Digest.String(), nil
}

// worthGet tells whether a failed HEAD request may succeed as a GET: not
// after a refusal of the credentials, a missing manifest, a rate limit, a
// server error, a network failure or the timeout.
func worthGet(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var terr *transport.Error
	if !errors.As(err, &terr) {
		// go-containerregistry's own complaints about the response, such
		// as a missing Docker-Content-Digest header, are plain errors;
		// network failures are *url.Error.
		var neterr interface{ Timeout() bool }
		return !errors.As(err, &neterr)
	}
	switch terr.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests:
		return false
	}
	return terr.StatusCode < http.StatusInternalServerError
}
