package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/windlass-dev/windlass/internal/archive"
)

// ErrTooLarge is wrapped by the errors of a manifest or a layer larger than
// its limit, or a layer larger than its descriptor declares.
var ErrTooLarge = errors.New("larger than the limit")

// ErrDigestMismatch is wrapped by the errors of a manifest or a layer whose
// content does not hash to the digest it was asked for by.
var ErrDigestMismatch = errors.New("the content does not match its digest")

// sha256Hex matches the hex part of a sha256 digest.
var sha256Hex = regexp.MustCompile(`^[a-f0-9]{64}$`)

// SelectLayer returns the layer of m to read: the first layer when
// mediaType is empty, else the first layer of that media type. Its errors
// name the media types of the layers there are; the caller adds the
// artifact's URL.
func SelectLayer(m *v1.Manifest, mediaType string) (v1.Descriptor, error) {
	if m == nil || len(m.Layers) == 0 {
		return v1.Descriptor{}, errors.New("the artifact has no layer")
	}
	if mediaType == "" {
		return m.Layers[0], nil
	}
	for _, l := range m.Layers {
		if string(l.MediaType) == mediaType {
			return l, nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("the artifact has no layer of media type %q: its layers are of media type %s",
		mediaType, mediaTypes(m.Layers))
}

// mediaTypes returns the distinct media types of layers, quoted and sorted.
func mediaTypes(layers []v1.Descriptor) string {
	seen := map[string]bool{}
	var quoted []string
	for _, l := range layers {
		if q := fmt.Sprintf("%q", l.MediaType); !seen[q] {
			seen[q] = true
			quoted = append(quoted, q)
		}
	}
	sort.Strings(quoted)
	return strings.Join(quoted, ", ")
}

// OpenLayer starts downloading the blob d of repo and returns it, still
// compressed, as a stream: nothing is held whole in memory. It is refused
// before any request when d.Size is more than maxSize (zero or less means
// archive.DefaultMaxSize). Reading fails (with ErrTooLarge) as soon as the
// registry sends more than d.Size bytes, and at the end of the stream
// (with ErrDigestMismatch) when the content does not hash to d.Digest.
// Close reads what is left (at most d.Size bytes, within ctx) to verify
// the digest of a stream that was not read to its end, and returns the
// first error of the stream: a caller that checks the error of Close never
// takes unverified content for verified.
func OpenLayer(ctx context.Context, repo name.Repository, d v1.Descriptor, maxSize int64, o Options) (io.ReadCloser, error) {
	if maxSize <= 0 {
		maxSize = archive.DefaultMaxSize
	}
	what := fmt.Sprintf("the layer %s of %s", d.Digest, URL(repo))
	if err := checkLayer(d, maxSize); err != nil {
		return nil, fmt.Errorf("refusing %s: %w", what, err)
	}
	o, err := o.withAuth(ctx, repo)
	if err != nil {
		return nil, err
	}
	resp, err := o.getBlob(ctx, repo, d.Digest, "downloading "+what)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > d.Size {
		resp.Body.Close()
		return nil, fmt.Errorf("downloading %s: the registry announces %d bytes, %w of the %d bytes its descriptor declares",
			what, resp.ContentLength, ErrTooLarge, d.Size)
	}
	return &layerReader{ctx: ctx, body: resp.Body, hash: sha256.New(), want: d.Digest, size: d.Size, what: what, o: o}, nil
}

// checkLayer refuses a descriptor that is not a sha256 blob of at most
// maxSize bytes.
func checkLayer(d v1.Descriptor, maxSize int64) error {
	switch {
	case d.Digest.Algorithm != "sha256" || !sha256Hex.MatchString(d.Digest.Hex):
		return errors.New("its digest is not a sha256 digest")
	case d.Size < 0:
		return fmt.Errorf("its descriptor declares a negative size, %d", d.Size)
	case d.Size > maxSize:
		return fmt.Errorf("it is %d bytes, %w of %d bytes", d.Size, ErrTooLarge, maxSize)
	}
	return nil
}

// getBlob sends the GET request of blob h of repo and checks its status;
// what says what failed in the errors.
func (o Options) getBlob(ctx context.Context, repo name.Repository, h v1.Hash, what string) (*http.Response, error) {
	client, err := o.client(ctx, repo)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint(repo, "blobs", h.String()), nil)
	if err != nil {
		return nil, o.registryError(what, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, o.registryError(what, err)
	}
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		resp.Body.Close()
		return nil, o.registryError(what, err)
	}
	return resp, nil
}

// layerReader streams a blob, counting and hashing what it reads.
type layerReader struct {
	ctx  context.Context
	body io.ReadCloser
	hash hash.Hash
	want v1.Hash
	// size is the size the descriptor declares, read what was read.
	size, read int64
	what       string
	o          Options
	// err is the first error of the stream, io.EOF once it is verified.
	err    error
	closed bool
}

// Read implements io.Reader.
func (r *layerReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	// One byte more than declared at most, to see a longer stream.
	if room := r.size - r.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := r.body.Read(p)
	if over := r.read + int64(n) - r.size; over > 0 {
		n -= int(over)
		r.fail(fmt.Errorf("downloading %s: the registry sent more than the %d bytes its descriptor declares: %w",
			r.what, r.size, ErrTooLarge))
	}
	r.read += int64(n)
	r.hash.Write(p[:n])
	switch {
	case r.err != nil:
	case err == io.EOF:
		r.err = r.verify()
	case err != nil:
		r.fail(r.readError(err))
	}
	return n, r.err
}

// fail records the first error of the stream.
func (r *layerReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// readError describes an error of the stream, keeping the context's.
func (r *layerReader) readError(err error) error {
	if ctxErr := r.ctx.Err(); ctxErr != nil {
		return fmt.Errorf("downloading %s: stopped after %d bytes: %w", r.what, r.read, ctxErr)
	}
	return fmt.Errorf("downloading %s: %s", r.what, r.o.describe(err))
}

// verify checks the size and the digest of the whole stream, and returns
// io.EOF when both match.
func (r *layerReader) verify() error {
	if r.read < r.size {
		return fmt.Errorf("downloading %s: the stream ended after %d of the %d bytes its descriptor declares: %w",
			r.what, r.read, r.size, io.ErrUnexpectedEOF)
	}
	got := hex.EncodeToString(r.hash.Sum(nil))
	if got != r.want.Hex {
		return fmt.Errorf("downloading %s: the registry sent content of digest sha256:%s: %w", r.what, got, ErrDigestMismatch)
	}
	return io.EOF
}

// Close implements io.Closer: it reads the rest of a stream that was not
// read to its end, to verify it, closes the connection and returns the
// first error of the stream.
func (r *layerReader) Close() error {
	if !r.closed {
		r.closed = true
		if r.err == nil {
			_, _ = io.Copy(io.Discard, r)
		}
		r.body.Close()
	}
	if errors.Is(r.err, io.EOF) {
		return nil
	}
	return r.err
}
