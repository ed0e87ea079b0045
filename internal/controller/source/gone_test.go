package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
)

// TestGoneSweep: a controller that starts again removes the artifacts of
// the sources deleted while it was away (no finalizer held them), and
// keeps those of the sources that exist and of other kinds.
func TestGoneSweep(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	kept := newGitRepository(ns, "kept", "https://example.com/kept.git")
	kept.Spec.Suspend = true
	g.Expect(env.Client.Create(ctx, kept)).To(Succeed())

	own, err := artifact.New(t.TempDir(), "127.0.0.1:1", time.Minute, 2)
	g.Expect(err).NotTo(HaveOccurred())
	write := func(kind, name string) string {
		dir := filepath.Join(own.BasePath(), kind, ns, name)
		g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "abc.tar.gz"), []byte("artifact"), 0o644)).To(Succeed())
		return dir
	}
	keptDir := write("gitrepository", "kept")
	goneDir := write("gitrepository", "gone")
	otherKind := write("ocirepository", "gone")

	sweep := &goneSweep{store: artifactStore{kind: sourcev1.GitRepositoryKind, storage: own},
		newObj: func() client.Object { return &sourcev1.GitRepository{} }}
	removed, err := sweep.sweep(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(ConsistOf(ns + "/gone"))
	g.Expect(goneDir).NotTo(BeADirectory())
	g.Expect(keptDir).To(BeADirectory())
	g.Expect(otherKind).To(BeADirectory(), "another kind's sweep is another's")

	removed, err = sweep.sweep(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeEmpty(), "a second sweep finds nothing")
}
