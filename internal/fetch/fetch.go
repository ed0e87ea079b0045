// Package fetch gets a source's artifact for the controllers that consume
// it, and unpacks it into a folder. The artifact's digest is always checked
// before anything is unpacked.
//
// Two fetchers exist: one over HTTP, from the URL the source advertises,
// and one that reads the artifact storage directly when the source
// controller runs in the same process, saving the round trip and a copy.
package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/netguard"
	"github.com/windlass-dev/windlass/internal/redact"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// Fetcher unpacks an artifact into a folder.
type Fetcher interface {
	Fetch(ctx context.Context, a meta.Artifact, dir string) error
}

// ErrNotFound is returned, wrapped, when the artifact is not (or no longer)
// where its source says: usually a newer revision replaced it, and the
// consumer should wait for the source's next status.
var ErrNotFound = errors.New("artifact not found")

// Local reads artifacts straight from the storage of an in-process source
// controller. An artifact that the storage defers (see
// artifact.Storage.Defer) is asked for and waited for.
type Local struct {
	Storage *artifact.Storage
}

// Fetch verifies the artifact's digest and unpacks it into dir.
func (l *Local) Fetch(ctx context.Context, a meta.Artifact, dir string) error {
	if err := notStoredHere(a); err != nil {
		return err
	}
	l.restore(ctx, a)
	err := l.Storage.ExtractTo(a, "", dir)
	if errors.Is(err, artifact.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, a.Path)
	}
	return err
}

// Patch turns dir, the tree of the artifact old, into the tree of new, an
// artifact of the same source, writing only the folders that changed; it
// returns false, leaving dir alone, when the storage cannot tell what
// changed.
func (l *Local) Patch(ctx context.Context, old, new meta.Artifact, dir string) (bool, error) {
	if err := notStoredHere(new); err != nil {
		return false, err
	}
	l.restore(ctx, new)
	patched, err := l.Storage.PatchTo(old, new, dir)
	if errors.Is(err, artifact.ErrNotFound) {
		return false, fmt.Errorf("%w: %s", ErrNotFound, new.Path)
	}
	return patched, err
}

// restore waits until a, when the storage defers it, is stored (see
// artifact.Storage.Restore): the source controller of this process stores
// it when asked. It holds no lock of the storage's, which the store takes.
func (l *Local) restore(ctx context.Context, a meta.Artifact) {
	if !l.Storage.ArtifactExists(a) {
		l.Storage.Restore(ctx, a)
	}
}

// notStoredHere returns ErrNotFound, wrapped, for an artifact without a
// path: one that only its URL reaches (see sourceref.Resolver.Get).
func notStoredHere(a meta.Artifact) error {
	if a.Path == "" {
		return fmt.Errorf("%w: no path in this storage for '%s'", ErrNotFound, redact.URL(a.URL))
	}
	return nil
}

// Patcher is a Fetcher that can also turn the tree of an earlier artifact
// of a source into the tree of a newer one; TreeCache uses it.
type Patcher interface {
	Fetcher
	Patch(ctx context.Context, old, new meta.Artifact, dir string) (bool, error)
}

// HTTP downloads artifacts from their URL.
type HTTP struct {
	// Client makes the requests; its Timeout bounds each attempt.
	Client *http.Client
	// Retries is how many times a failed download is tried again.
	Retries int
	// MaxSize caps the size of an artifact, compressed.
	MaxSize int64
	// Route, when set, returns the URL to download an artifact from in
	// place of its own (the replica that stores it, when replicas share
	// one address); "" when nothing serves it yet (ErrNotFound).
	Route func(ctx context.Context, a meta.Artifact) string
}

// artifactAddresses are the addresses artifacts are downloaded from: the
// storage of a source controller or of another replica, in the cluster
// (private) or on this host (loopback), or another producer's. Never a
// link-local address or a cloud metadata endpoint, which a tenant's
// ExternalArtifact could otherwise make the controller ask.
var artifactAddresses = netguard.Policy{AllowLoopback: true, AllowPrivate: true}

// NewHTTP returns an HTTP fetcher with sensible limits, which connects
// only to the artifactAddresses.
func NewHTTP() *HTTP {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = artifactAddresses.Dialer(30 * time.Second).DialContext
	return &HTTP{Client: &http.Client{Timeout: 2 * time.Minute, Transport: transport}, Retries: 3, MaxSize: archive.DefaultMaxSize}
}

// Fetch downloads the artifact to a temporary file while hashing it, checks
// the digest, then unpacks it into dir.
func (h *HTTP) Fetch(ctx context.Context, a meta.Artifact, dir string) error {
	f, err := h.downloadFile(ctx, a)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return archive.Extract(f, dir)
}

// downloadFile downloads the artifact to a temporary file, retrying, and
// returns it, checked and rewound; the caller closes and removes it.
func (h *HTTP) downloadFile(ctx context.Context, a meta.Artifact) (*os.File, error) {
	if h.Route != nil {
		if a.URL = h.Route(ctx, a); a.URL == "" {
			return nil, fmt.Errorf("%w: artifact %s is not stored yet where it is served", ErrNotFound, a.Path)
		}
	}
	f, err := workdir.CreateTemp("artifact-*.tar.gz")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt <= h.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				lastErr = ctx.Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
			if ctx.Err() != nil {
				break
			}
		}
		lastErr = h.download(ctx, a, f)
		if lastErr == nil || errors.Is(lastErr, ErrNotFound) || errors.Is(lastErr, netguard.ErrLinkLocal) || ctx.Err() != nil {
			break
		}
	}
	if lastErr == nil {
		_, lastErr = f.Seek(0, io.SeekStart)
	}
	if lastErr != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, lastErr
	}
	return f, nil
}

// download writes the artifact to f and checks its digest.
func (h *HTTP) download(ctx context.Context, a meta.Artifact, f *os.File) error {
	if err := resetFile(f); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return fmt.Errorf("invalid artifact URL '%s': %w", redact.URL(a.URL), err)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return redact.Error(fmt.Errorf("downloading artifact: %w", err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w at '%s'", ErrNotFound, redact.URL(a.URL))
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("downloading artifact from '%s': %s", redact.URL(a.URL), resp.Status)
	}
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hash), io.LimitReader(resp.Body, h.MaxSize+1))
	if err != nil {
		return redact.Error(fmt.Errorf("downloading artifact: %w", err))
	}
	if n > h.MaxSize {
		return fmt.Errorf("artifact from '%s' is larger than %d bytes", redact.URL(a.URL), h.MaxSize)
	}
	if got := "sha256:" + hex.EncodeToString(hash.Sum(nil)); got != a.Digest {
		return fmt.Errorf("artifact from '%s' has digest %s, want %s", redact.URL(a.URL), got, a.Digest)
	}
	return nil
}

func resetFile(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}
