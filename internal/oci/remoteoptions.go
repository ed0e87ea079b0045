package oci

import (
	"context"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RemoteOptions returns the go-containerregistry options of o, for code
// that calls the registry itself (signature verification, for one).
func (o Options) RemoteOptions(ctx context.Context) []remote.Option {
	return o.remote(ctx)
}
