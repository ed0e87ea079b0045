package fetch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/artifact"
)

func TestLocalOrHTTP(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	storage, a, srv := storedArtifact(t, g)
	other, err := artifact.New(t.TempDir(), "127.0.0.1:1", time.Minute, 2)
	g.Expect(err).NotTo(HaveOccurred())

	// Another replica's artifact: downloaded from its URL.
	remote := &LocalOrHTTP{Local: &Local{Storage: other}, HTTP: NewHTTP()}
	dir := t.TempDir()
	g.Expect(remote.Fetch(ctx, a, dir)).To(Succeed())
	g.Expect(os.ReadFile(filepath.Join(dir, "deploy", "app.yaml"))).To(Equal([]byte("kind: ConfigMap\n")))
	data, err := remote.ReadAll(ctx, a, 1<<20)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).NotTo(BeEmpty())
	patched, err := remote.Patch(ctx, a, a, dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(patched).To(BeFalse(), "a tree of another replica's artifact is fetched whole")

	// This replica's artifact: read from the storage, with no server.
	srv.Close()
	local := &LocalOrHTTP{Local: &Local{Storage: storage}, HTTP: NewHTTP()}
	g.Expect(local.Fetch(ctx, a, t.TempDir())).To(Succeed())
	_, err = local.ReadAll(ctx, a, 1<<20)
	g.Expect(err).NotTo(HaveOccurred())

	// Gone from both: an error.
	remote.HTTP.Retries = 0
	g.Expect(remote.Fetch(ctx, a, t.TempDir())).To(HaveOccurred())
}
