package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		base    string
		addr    string
		ttl     time.Duration
		records int
		wantErr string
	}{
		{name: "valid", base: "data", addr: "localhost:9090", ttl: time.Minute, records: 2},
		{name: "nested base is created", base: "a/b/c", addr: "10.0.0.1", ttl: time.Second, records: 1},
		{name: "empty base", base: "", addr: "localhost", ttl: time.Minute, records: 2, wantErr: "base path is empty"},
		{name: "empty address", base: "data", addr: "", ttl: time.Minute, records: 2, wantErr: "advertised address"},
		{name: "address with scheme", base: "data", addr: "http://x", ttl: time.Minute, records: 2, wantErr: "advertised address"},
		{name: "address with credentials", base: "data", addr: "user:pass@host", ttl: time.Minute, records: 2, wantErr: "advertised address"},
		{name: "zero ttl", base: "data", addr: "localhost", ttl: 0, records: 2, wantErr: "TTL"},
		{name: "zero records", base: "data", addr: "localhost", ttl: time.Minute, records: 0, wantErr: "records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			base := tt.base
			if base != "" {
				base = filepath.Join(t.TempDir(), base)
			}
			s, err := New(base, tt.addr, tt.ttl, tt.records)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			fi, err := os.Stat(s.BasePath())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fi.IsDir()).To(BeTrue())
			g.Expect(fi.Mode().Perm()&0o007).To(BeZero(), "storage is not world-accessible")
		})
	}
}

func TestNewArtifactFor(t *testing.T) {
	s := newStorage(t)
	tests := []struct {
		name     string
		kind     string
		ns, obj  string
		file     string
		wantPath string
		wantURL  string
	}{
		{
			name: "git repository", kind: "GitRepository", ns: "default", obj: "podinfo", file: "8f3e.tar.gz",
			wantPath: "gitrepository/default/podinfo/8f3e.tar.gz",
			wantURL:  "http://" + testAddr + "/gitrepository/default/podinfo/8f3e.tar.gz",
		},
		{
			name: "file name needing escapes", kind: "Bucket", ns: "flux-system", obj: "b", file: "a b#c?.tgz",
			wantPath: "bucket/flux-system/b/a b#c?.tgz",
			wantURL:  "http://" + testAddr + "/bucket/flux-system/b/a%20b%23c%3F.tgz",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a := s.NewArtifactFor(tt.kind, obj(tt.ns, tt.obj), "main@sha1:abc", tt.file)
			g.Expect(a.Path).To(Equal(tt.wantPath))
			g.Expect(a.URL).To(Equal(tt.wantURL))
			g.Expect(a.Revision).To(Equal("main@sha1:abc"))
			g.Expect(a.Digest).To(BeEmpty())
			g.Expect(s.LocalPath(a)).To(Equal(filepath.Join(s.BasePath(), filepath.FromSlash(tt.wantPath))))
		})
	}
}

func TestLocalPath(t *testing.T) {
	s := newStorage(t)
	tests := []struct {
		path string
		want string // relative to the base path; "" for invalid
	}{
		{path: "gitrepository/default/podinfo/a.tar.gz", want: "gitrepository/default/podinfo/a.tar.gz"},
		{path: "", want: ""},
		{path: "../../etc/passwd", want: ""},
		{path: "gitrepository/default/../../../../etc/passwd", want: ""},
		{path: "gitrepository/default/podinfo/../x", want: ""},
		{path: "gitrepository/default/podinfo/..", want: ""},
		{path: "/etc/passwd", want: ""},
		{path: "/gitrepository/default/podinfo/a", want: ""},
		{path: `gitrepository\default\podinfo\a`, want: ""},
		{path: "gitrepository/default/podinfo/.tmp-123", want: ""},
		{path: "gitrepository/default/podinfo", want: ""},
		{path: "gitrepository/default/podinfo/a/b", want: ""},
		{path: "gitrepository//podinfo/a", want: ""},
		{path: "gitrepository/default/podinfo/a\x00b", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)
			got := s.LocalPath(meta.Artifact{Path: tt.path})
			if tt.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(Equal(filepath.Join(s.BasePath(), filepath.FromSlash(tt.want))))
		})
	}
}

func TestLocalPathConfinedDespiteSymlinks(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	outside := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(s.BasePath(), "gitrepository"), 0o750)).To(Succeed())
	g.Expect(os.Symlink(outside, filepath.Join(s.BasePath(), "gitrepository", "default"))).To(Succeed())
	lp := s.LocalPath(meta.Artifact{Path: "gitrepository/default/podinfo/a.tar.gz"})
	g.Expect(lp).To(HavePrefix(s.BasePath() + string(filepath.Separator)))
	g.Expect(lp).NotTo(HavePrefix(outside))
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, s *Storage, a *meta.Artifact)
		want   error
	}{
		{name: "intact", mutate: func(*testing.T, *Storage, *meta.Artifact) {}},
		{name: "uppercase hex digest", mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) {
			a.Digest = "sha256:" + strings.ToUpper(strings.TrimPrefix(a.Digest, "sha256:"))
		}},
		{name: "deleted file", want: ErrNotFound, mutate: func(t *testing.T, s *Storage, a *meta.Artifact) {
			if err := os.Remove(s.LocalPath(*a)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "replaced by a directory", want: ErrNotFound, mutate: func(t *testing.T, s *Storage, a *meta.Artifact) {
			lp := s.LocalPath(*a)
			if err := os.Remove(lp); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(lp, 0o750); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "tampered file", want: ErrDigestMismatch, mutate: func(t *testing.T, s *Storage, a *meta.Artifact) {
			f, err := os.OpenFile(s.LocalPath(*a), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("evil"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "empty digest", want: ErrInvalidDigest, mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) { a.Digest = "" }},
		{name: "other algorithm", want: ErrInvalidDigest, mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) {
			a.Digest = strings.Replace(a.Digest, "sha256", "sha512", 1)
		}},
		{name: "short digest", want: ErrInvalidDigest, mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) { a.Digest = "sha256:abcd" }},
		{name: "other digest", want: ErrDigestMismatch, mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) {
			a.Digest = "sha256:" + strings.Repeat("0", 64)
		}},
		{name: "invalid path", want: ErrInvalidPath, mutate: func(_ *testing.T, _ *Storage, a *meta.Artifact) { a.Path = "../../etc/passwd" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStorage(t)
			a := storedArtifact(t, s, "a.tar.gz")
			tt.mutate(t, s, &a)
			err := s.Verify(a)
			if tt.want == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}

func TestArtifactExistsAndOpen(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := storedArtifact(t, s, "a.tar.gz")
	g.Expect(s.ArtifactExists(a)).To(BeTrue())

	rc, err := s.Open(a)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := io.ReadAll(rc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rc.Close()).To(Succeed())
	g.Expect(int64(len(data))).To(Equal(*a.Size))

	missing := a
	missing.Path = "gitrepository/default/podinfo/missing.tar.gz"
	g.Expect(s.ArtifactExists(missing)).To(BeFalse())
	_, err = s.Open(missing)
	g.Expect(err).To(MatchError(ErrNotFound))

	dir := a
	dir.Path = "gitrepository/default/podinfo/sub"
	g.Expect(os.Mkdir(s.LocalPath(dir), 0o750)).To(Succeed())
	g.Expect(s.ArtifactExists(dir)).To(BeFalse())
	_, err = s.Open(dir)
	g.Expect(err).To(MatchError(ErrNotFound))

	bad := meta.Artifact{Path: "../x/y/z"}
	g.Expect(s.ArtifactExists(bad)).To(BeFalse())
	_, err = s.Open(bad)
	g.Expect(err).To(MatchError(ErrInvalidPath))
}

// TestStoredElsewhere: an artifact is stored elsewhere when another
// address stored it and this storage does not hold it.
func TestStoredElsewhere(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	here := storedArtifact(t, s, "a.tar.gz")
	g.Expect(s.StoredElsewhere("GitRepository", obj("default", "podinfo"), here)).To(BeFalse(), "stored here")

	moved := here
	moved.URL = "http://gone:9090/" + here.Path
	g.Expect(s.StoredElsewhere("GitRepository", obj("default", "podinfo"), moved)).To(BeFalse(), "held here, whatever the address")

	lost := moved
	lost.Path = "gitrepository/default/podinfo/b.tar.gz"
	lost.URL = "http://gone:9090/" + lost.Path
	g.Expect(s.StoredElsewhere("GitRepository", obj("default", "podinfo"), lost)).To(BeTrue())

	gone := lost
	gone.URL = s.NewArtifactFor("GitRepository", obj("default", "podinfo"), gone.Revision, "b.tar.gz").URL
	g.Expect(s.StoredElsewhere("GitRepository", obj("default", "podinfo"), gone)).To(BeFalse(),
		"stored at this address and gone from it: not another replica's")

	s.SetShared(true)
	g.Expect(s.StoredElsewhere("GitRepository", obj("default", "podinfo"), gone)).To(BeTrue(),
		"the address is the ring's: another replica stored it")
	g.Expect(s.StoredElsewhere("GitRepository", obj("default", "podinfo"), here)).To(BeFalse(), "stored here")
}

func TestDigest(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "", want: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{in: "hello", want: "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Digest(strings.NewReader(tt.in))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			sum := sha256.Sum256([]byte(tt.in))
			g.Expect(got).To(Equal("sha256:" + hex.EncodeToString(sum[:])))
		})
	}
	_, err := Digest(io.MultiReader(bytes.NewReader([]byte("x")), errReader{}))
	NewWithT(t).Expect(err).To(HaveOccurred())
}

// errReader always fails.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
