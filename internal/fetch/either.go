package fetch

import (
	"context"
	"errors"

	"github.com/windlass-dev/windlass/api/meta"
)

// LocalOrHTTP reads an artifact from the local storage when it holds it,
// and downloads it from its URL otherwise: when replicas share the sources
// (--shards=auto), a consumer's source may be held, and its artifact
// stored, by another replica.
type LocalOrHTTP struct {
	Local *Local
	HTTP  *HTTP
}

// Fetch unpacks the artifact into dir, from the local storage or over HTTP.
func (f *LocalOrHTTP) Fetch(ctx context.Context, a meta.Artifact, dir string) error {
	err := f.Local.Fetch(ctx, a, dir)
	if errors.Is(err, ErrNotFound) {
		return f.HTTP.Fetch(ctx, a, dir)
	}
	return err
}

// Patch patches dir when the local storage holds the new artifact, and
// otherwise returns false: the tree is then fetched whole.
func (f *LocalOrHTTP) Patch(ctx context.Context, old, new meta.Artifact, dir string) (bool, error) {
	patched, err := f.Local.Patch(ctx, old, new, dir)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return patched, err
}

// ReadAll returns the artifact's bytes, from the local storage or over
// HTTP.
func (f *LocalOrHTTP) ReadAll(ctx context.Context, a meta.Artifact, maxSize int64) ([]byte, error) {
	data, err := f.Local.ReadAll(ctx, a, maxSize)
	if errors.Is(err, ErrNotFound) {
		return f.HTTP.ReadAll(ctx, a, maxSize)
	}
	return data, err
}
