package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

var (
	// ErrInvalidPath is returned, wrapped, for an artifact path that is not
	// of the form <kind>/<namespace>/<name>/<file>, or whose elements are
	// empty, start with a dot or contain a backslash.
	ErrInvalidPath = errors.New("invalid artifact path")
	// ErrNotFound is returned, wrapped, when an artifact's file is missing
	// from storage or is not a regular file.
	ErrNotFound = errors.New("artifact not found in storage")
	// ErrDigestMismatch is returned, wrapped, when an artifact's file does
	// not have the recorded digest.
	ErrDigestMismatch = errors.New("artifact digest mismatch")
	// ErrInvalidDigest is returned, wrapped, when an artifact's recorded
	// digest is empty or not of the form sha256:<hex>.
	ErrInvalidDigest = errors.New("invalid artifact digest")
)

// digestAlgorithm is the only digest algorithm Storage writes and verifies.
const digestAlgorithm = "sha256"

// tempPrefix starts the name of every file being written. Artifact paths may
// not start with a dot, so temporary files are never addressable.
const tempPrefix = ".tmp-"

// Storage manages artifacts on the local file system under a base path.
type Storage struct {
	basePath         string
	hostname         string
	retentionTTL     time.Duration
	retentionRecords int
	locks            keyedMutex
	fingerprints     treeFingerprints
	// shared is set when the advertised address is shared by replicas
	// that store the artifacts of different sources (see SetShared).
	shared bool
	// storedAgain are told of the artifacts built again here (see
	// OnStoredAgain).
	storedAgain []func(kind string, obj metav1.Object)
	// deferrals are the artifacts stored again when asked for (see
	// Defer).
	deferrals deferrals
}

// OnStoredAgain has fn told of every artifact that a source controller of
// this process builds again, as another replica had stored it, under the
// same URL: the source's status does not change, so its consumers that
// waited for the artifact here learn it from fn. Call it before the
// storage is used.
func (s *Storage) OnStoredAgain(fn func(kind string, obj metav1.Object)) {
	s.storedAgain = append(s.storedAgain, fn)
}

// StoredAgain tells the OnStoredAgain functions, and the readers waiting
// for it (see Restore), that the artifact of obj, of kind, was built again
// here.
func (s *Storage) StoredAgain(kind string, obj metav1.Object) {
	s.Undefer(kind, obj)
	for _, fn := range s.storedAgain {
		fn(kind, obj)
	}
}

// SetShared says that the advertised address is shared by the replicas
// of a ring (--shards=auto behind one Service): every replica names an
// artifact with the same URL, and the artifact of a source whose file
// this storage lacks was stored by another replica. Call it before the
// storage is used.
func (s *Storage) SetShared(shared bool) { s.shared = shared }

// Shared tells whether the advertised address is shared (see SetShared).
func (s *Storage) Shared() bool { return s.shared }

// New returns a Storage rooted at basePath, which it creates (mode 0750) if
// needed. advertisedAddr is the host[:port] that artifact URLs point at.
// GarbageCollect keeps at most retentionRecords artifacts per object (at
// least 1, the current one) and none older than retentionTTL (which must be
// positive), besides the current one.
func New(basePath, advertisedAddr string, retentionTTL time.Duration, retentionRecords int) (*Storage, error) {
	if basePath == "" {
		return nil, errors.New("storage base path is empty")
	}
	if advertisedAddr == "" || strings.ContainsAny(advertisedAddr, "/?#@") {
		return nil, fmt.Errorf("storage advertised address %q is not a host[:port]", advertisedAddr)
	}
	if retentionTTL <= 0 {
		return nil, fmt.Errorf("artifact retention TTL must be positive, got %s", retentionTTL)
	}
	if retentionRecords < 1 {
		return nil, fmt.Errorf("artifact retention records must be at least 1, got %d", retentionRecords)
	}
	abs, err := filepath.Abs(basePath)
	if err != nil {
		return nil, fmt.Errorf("resolving storage base path: %w", err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("creating storage base path: %w", err)
	}
	return &Storage{
		basePath:         abs,
		hostname:         advertisedAddr,
		retentionTTL:     retentionTTL,
		retentionRecords: retentionRecords,
	}, nil
}

// BasePath returns the absolute path of the storage root.
func (s *Storage) BasePath() string { return s.basePath }

// NewArtifactFor returns an artifact for the object of the given kind, with
// its Path (<kind>/<namespace>/<name>/<fileName>, kind lowercased), URL and
// Revision set.
func (s *Storage) NewArtifactFor(kind string, obj metav1.Object, revision, fileName string) meta.Artifact {
	p := path.Join(objectDir(kind, obj.GetNamespace(), obj.GetName()), fileName)
	return meta.Artifact{
		Path:     p,
		URL:      s.urlFor(p),
		Revision: revision,
	}
}

// objectDir returns the folder, relative to the storage root, of the
// artifacts of the object of kind in namespace with name.
func objectDir(kind, namespace, name string) string {
	return path.Join(strings.ToLower(kind), namespace, name)
}

// urlFor returns the HTTP URL of the artifact path p.
func (s *Storage) urlFor(p string) string {
	u := url.URL{Scheme: "http", Host: s.hostname, Path: "/" + p}
	return u.String()
}

// validatePath checks that p is <kind>/<namespace>/<name>/<file> with safe
// elements.
func validatePath(p string) error {
	if strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("%w %q: contains a backslash or NUL", ErrInvalidPath, p)
	}
	elems := strings.Split(p, "/")
	if len(elems) != 4 {
		return fmt.Errorf("%w %q: want <kind>/<namespace>/<name>/<file>", ErrInvalidPath, p)
	}
	for _, e := range elems {
		if e == "" || strings.HasPrefix(e, ".") {
			return fmt.Errorf("%w %q: empty element, or one starting with a dot", ErrInvalidPath, p)
		}
	}
	return nil
}

// localPath validates the artifact path p and returns its location on disk,
// confined to the base path.
func (s *Storage) localPath(p string) (string, error) {
	if err := validatePath(p); err != nil {
		return "", err
	}
	lp, err := securejoin.SecureJoin(s.basePath, filepath.FromSlash(p))
	if err != nil {
		return "", fmt.Errorf("confining artifact path %q: %w", p, err)
	}
	return lp, nil
}

// LocalPath returns the location on disk of the artifact, or "" when its
// path is invalid (see ErrInvalidPath). The result is always under the base
// path.
func (s *Storage) LocalPath(a meta.Artifact) string {
	lp, err := s.localPath(a.Path)
	if err != nil {
		return ""
	}
	return lp
}

// ArtifactExists reports whether the artifact's file exists in storage as a
// regular file.
func (s *Storage) ArtifactExists(a meta.Artifact) bool {
	lp, err := s.localPath(a.Path)
	if err != nil {
		return false
	}
	fi, err := os.Lstat(lp)
	return err == nil && fi.Mode().IsRegular()
}

// StoredElsewhere reports whether a, the artifact of obj of kind, was
// stored by another replica (whose objects this one took over) and is not
// in this storage: its source controller builds it again here. The
// artifact was stored at another address, or the address is shared (see
// SetShared).
func (s *Storage) StoredElsewhere(kind string, obj metav1.Object, a meta.Artifact) bool {
	return !s.ArtifactExists(a) && (s.shared || a.URL != s.NewArtifactFor(kind, obj, a.Revision, a.FileName()).URL)
}

// Open opens the artifact's file for reading. A missing file gives an error
// wrapping ErrNotFound.
func (s *Storage) Open(a meta.Artifact) (io.ReadCloser, error) {
	return s.open(a)
}

// open opens the artifact's file, checking it is a regular file.
func (s *Storage) open(a meta.Artifact) (*os.File, error) {
	lp, err := s.localPath(a.Path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(lp)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, a.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening artifact %s: %w", a.Path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading artifact %s: %w", a.Path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotFound, a.Path)
	}
	return f, nil
}

// Verify checks that the artifact's file exists and has the recorded
// digest. The error wraps ErrNotFound when the file is gone ("disappeared
// from storage"), ErrInvalidDigest when the artifact has no usable digest,
// and ErrDigestMismatch when the content differs.
func (s *Storage) Verify(a meta.Artifact) error {
	f, err := s.open(a)
	if err != nil {
		return err
	}
	defer f.Close()
	return verifyFile(f, a)
}

// verifyFile checks the content of f, read from its current offset, against
// the artifact's digest.
func verifyFile(f io.Reader, a meta.Artifact) error {
	if err := checkDigestFormat(a.Digest); err != nil {
		return err
	}
	got, err := Digest(f)
	if err != nil {
		return fmt.Errorf("computing digest of artifact %s: %w", a.Path, err)
	}
	if !strings.EqualFold(got, a.Digest) {
		return fmt.Errorf("%w: %s has %s, want %s", ErrDigestMismatch, a.Path, got, a.Digest)
	}
	return nil
}

// checkDigestFormat checks that d is sha256:<64 hex digits>.
func checkDigestFormat(d string) error {
	algo, sum, ok := strings.Cut(d, ":")
	if !ok || algo != digestAlgorithm {
		return fmt.Errorf("%w %q: want %s:<hex>", ErrInvalidDigest, d, digestAlgorithm)
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("%w %q: want %d hex-encoded bytes", ErrInvalidDigest, d, sha256.Size)
	}
	return nil
}

// Digest returns the sha256 digest of what r yields, as sha256:<hex>.
func Digest(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("computing digest: %w", err)
	}
	return formatDigest(h.Sum(nil)), nil
}

// formatDigest renders a sha256 sum.
func formatDigest(sum []byte) string {
	return digestAlgorithm + ":" + hex.EncodeToString(sum)
}
