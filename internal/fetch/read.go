package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/artifact"
)

// Reader reads an artifact whole, as it is stored (a packaged Helm chart,
// say), its digest checked.
type Reader interface {
	ReadAll(ctx context.Context, a meta.Artifact, maxSize int64) ([]byte, error)
}

// ReadAll returns the bytes of the artifact, checked against its digest;
// an artifact over maxSize bytes is refused.
func (l *Local) ReadAll(ctx context.Context, a meta.Artifact, maxSize int64) ([]byte, error) {
	if err := notStoredHere(a); err != nil {
		return nil, err
	}
	l.restore(ctx, a)
	unlock, err := l.Storage.Lock(a)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := l.Storage.Verify(a); err != nil {
		if errors.Is(err, artifact.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, a.Path)
		}
		return nil, err
	}
	f, err := l.Storage.Open(a)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, maxSize, a.Path)
}

// ReadAll downloads the artifact, checks its digest and returns its bytes;
// an artifact over maxSize bytes (or the fetcher's MaxSize) is refused.
func (h *HTTP) ReadAll(ctx context.Context, a meta.Artifact, maxSize int64) ([]byte, error) {
	f, err := h.downloadFile(ctx, a)
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return readLimited(f, maxSize, a.Path)
}

func readLimited(r io.Reader, maxSize int64, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("artifact %s is larger than %d bytes", name, maxSize)
	}
	return data, nil
}
