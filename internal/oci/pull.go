package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/windlass-dev/windlass/internal/archive"
)

// Pulled describes a pulled artifact.
type Pulled struct {
	// Ref is the reference that was pulled.
	Ref name.Reference
	// Digest is the digest of the artifact's manifest.
	Digest v1.Hash
	// Annotations are those of the manifest.
	Annotations map[string]string
}

// DigestURL returns oci://HOST/REPO:TAG@sha256:HEX, or
// oci://HOST/REPO@sha256:HEX when the reference was a digest.
func (p Pulled) DigestURL() string {
	if _, ok := p.Ref.(name.Digest); ok {
		return URL(p.Ref)
	}
	return URL(p.Ref) + "@" + p.Digest.String()
}

// Pull extracts the content layer of the artifact ref into dir, which must
// not exist or be empty. The layer is the first of media type
// ContentMediaType, or else the first layer. It resolves ref to a digest
// (Resolve), reads the manifest at that digest (GetManifest: an image
// index is refused) and streams the layer (OpenLayer, whose size and
// digest are checked) through archive.Extract, whose limits apply (maxSize
// caps the uncompressed size; zero or less means archive.DefaultMaxSize):
// on any error, dir is left as it was, and nothing is ever written outside
// it.
func Pull(ctx context.Context, ref name.Reference, dir string, maxSize int64, o Options) (Pulled, error) {
	if maxSize <= 0 {
		maxSize = archive.DefaultMaxSize
	}
	if err := checkEmpty(dir); err != nil {
		return Pulled{}, err
	}
	o, err := o.withAuth(ctx, ref.Context())
	if err != nil {
		return Pulled{}, err
	}
	digest, err := digestOf(ctx, ref, o)
	if err != nil {
		return Pulled{}, err
	}
	m, err := GetManifest(ctx, ref.Context().Digest(digest.String()), o)
	if err != nil {
		return Pulled{}, err
	}
	p := Pulled{Ref: ref, Digest: digest, Annotations: m.Annotations}
	desc, err := contentLayer(m)
	if err != nil {
		return Pulled{}, fmt.Errorf("%s: %w", p.DigestURL(), err)
	}
	if desc.Size > maxSize {
		return Pulled{}, fmt.Errorf("%s: its layer is %d bytes, more than the limit of %d: raise --max-size if you trust it",
			p.DigestURL(), desc.Size, maxSize)
	}
	rc, err := OpenLayer(ctx, ref.Context(), desc, maxSize, o)
	if err != nil {
		return Pulled{}, err
	}
	defer rc.Close()
	if err := extractInto(rc, dir, maxSize); err != nil {
		return Pulled{}, fmt.Errorf("refusing %s: %w; nothing was written to %s", p.DigestURL(), err, dir)
	}
	return p, nil
}

// digestOf returns the digest of a digest reference, and resolves a tag.
func digestOf(ctx context.Context, ref name.Reference, o Options) (v1.Hash, error) {
	if d, ok := ref.(name.Digest); ok {
		h, err := v1.NewHash(d.DigestStr())
		if err != nil {
			return v1.Hash{}, fmt.Errorf("%s: the digest is not valid: %w", URL(ref), err)
		}
		return h, nil
	}
	return Resolve(ctx, ref, o)
}

// contentLayer returns the descriptor of the layer Pull extracts.
func contentLayer(m *v1.Manifest) (v1.Descriptor, error) {
	if l, err := SelectLayer(m, string(ContentMediaType)); err == nil {
		return l, nil
	}
	return SelectLayer(m, "")
}

// checkEmpty accepts a dir that does not exist or is an empty folder.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--output %s is not a folder that can be read: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--output %s is not empty: choose a new or empty folder", dir)
	}
	return nil
}

// extractInto extracts the tar.gz r into a new folder beside dir, closes r
// (which verifies a layer's digest) and renames the folder to dir, so that
// a refused archive leaves nothing behind.
func extractInto(r io.ReadCloser, dir string, maxSize int64) (err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", parent, err)
	}
	staging, err := os.MkdirTemp(parent, ".windlass-pull-*")
	if err != nil {
		return fmt.Errorf("creating a folder beside %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(staging)
		}
	}()
	if err := archive.Extract(r, staging, archive.WithMaxSize(maxSize)); err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		return err
	}
	if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replacing the empty folder %s: %w", dir, err)
	}
	return os.Rename(staging, abs)
}
