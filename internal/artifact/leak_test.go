package artifact_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// TestNoLeak_ExtractTo (security row 44) extracts artifacts, and fails
// to, many times: a whole artifact and a sub-folder of it (which goes
// through a temporary folder), one over the size limit, a corrupt and a
// truncated archive (whose digests match), a tampered one and a missing
// one. Afterwards the process holds no more open files and goroutines than
// before (see testutil.ExpectNoLeaks), and its work folder, where
// sub-folders are extracted, holds what it held before.
func TestNoLeak_ExtractTo(t *testing.T) {
	g := NewWithT(t)
	s, err := artifact.New(filepath.Join(t.TempDir(), "data"), "storage.example", time.Minute, 2)
	g.Expect(err).NotTo(HaveOccurred())
	stored := func(name string, write func(*meta.Artifact) error) meta.Artifact {
		a := s.NewArtifactFor("GitRepository", &metav1.ObjectMeta{Namespace: "default", Name: name}, "main@sha1:abc", name+".tar.gz")
		g.Expect(write(&a)).To(Succeed())
		return a
	}
	src := testutil.WriteTree(t, map[string]string{
		"kustomization.yaml": "resources: [apps]\n",
		"apps/deploy.yaml":   "kind: Deployment\n",
		"apps/big.yaml":      string(bytes.Repeat([]byte("x"), 64<<10)),
	})
	good := stored("good", func(a *meta.Artifact) error { return s.Archive(a, src, nil) })
	data, err := os.ReadFile(s.LocalPath(good))
	g.Expect(err).NotTo(HaveOccurred())
	corrupt := stored("corrupt", func(a *meta.Artifact) error { return s.Copy(a, bytes.NewReader([]byte("not a tar.gz"))) })
	truncated := stored("truncated", func(a *meta.Artifact) error { return s.Copy(a, bytes.NewReader(data[:len(data)/2])) })
	tampered := good
	tampered.Digest = "sha256:" + string(bytes.Repeat([]byte("0"), 64))
	missing := good
	missing.Path = "gitrepository/default/good/gone.tar.gz"

	work, err := workdir.Dir()
	g.Expect(err).NotTo(HaveOccurred())
	before, err := os.ReadDir(work)
	g.Expect(err).NotTo(HaveOccurred())

	round := func() {
		dest := t.TempDir()
		g.Expect(s.ExtractTo(good, "", dest)).To(Succeed())
		g.Expect(filepath.Join(dest, "apps", "deploy.yaml")).To(BeARegularFile())
		dest = t.TempDir()
		g.Expect(s.ExtractTo(good, "apps", dest)).To(Succeed())
		g.Expect(filepath.Join(dest, "big.yaml")).To(BeARegularFile())

		g.Expect(s.ExtractTo(good, "", t.TempDir(), archive.WithMaxSize(1024))).To(MatchError(archive.ErrTooLarge))
		g.Expect(s.ExtractTo(good, "apps", t.TempDir(), archive.WithMaxSize(1024))).To(MatchError(archive.ErrTooLarge))
		g.Expect(s.ExtractTo(corrupt, "", t.TempDir())).To(MatchError(ContainSubstring("extracting artifact " + corrupt.Path)))
		g.Expect(s.ExtractTo(truncated, "apps", t.TempDir())).To(MatchError(ContainSubstring("extracting artifact " + truncated.Path)))
		g.Expect(s.ExtractTo(tampered, "", t.TempDir())).To(MatchError(artifact.ErrDigestMismatch))
		g.Expect(s.ExtractTo(missing, "", t.TempDir())).To(MatchError(artifact.ErrNotFound))
	}
	testutil.ExpectNoLeaks(t, g, round)
	g.Expect(os.ReadDir(work)).To(HaveLen(len(before)), "no temporary folder is left in the work folder")
}
