package testutil

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/artifact"
)

// Download fetches an artifact from its advertised URL with hc (the
// default client when nil), checks it against the digest and size the
// status claims, and returns its bytes.
func Download(g Gomega, hc *http.Client, a *meta.Artifact) []byte {
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Get(a.URL)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s", a.URL)
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	digest, err := artifact.Digest(bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(Equal(a.Digest), "sha256 of the downloaded artifact")
	g.Expect(a.Size).NotTo(BeNil(), "status.artifact.size")
	g.Expect(int64(len(body))).To(Equal(*a.Size), "size of the downloaded artifact")
	return body
}

// Extract unpacks an artifact into a fresh folder of t and returns it.
func Extract(t *testing.T, g Gomega, body []byte) string {
	dir := t.TempDir()
	g.Expect(archive.Extract(bytes.NewReader(body), dir)).To(Succeed())
	return dir
}

// StartStorage opens an artifact storage in a new temporary folder and
// serves it on a loopback port until the process ends.
func StartStorage() (*artifact.Storage, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "windlass-storage-")
	if err != nil {
		return nil, err
	}
	storage, err := artifact.New(dir, ln.Addr().String(), time.Minute, 2)
	if err != nil {
		return nil, err
	}
	go func() { _ = http.Serve(ln, storage.Handler()) }()
	return storage, nil
}
