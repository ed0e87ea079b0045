package fetch

import (
	"context"
	"io"
	"testing"

	. "github.com/onsi/gomega"
)

// TestReaders: both readers return the artifact's bytes as stored, refuse
// a wrong digest, a missing artifact and one over the size limit.
func TestReaders(t *testing.T) {
	g := NewWithT(t)
	storage, a, _ := storedArtifact(t, g)
	f, err := storage.Open(a)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := io.ReadAll(f)
	f.Close()
	g.Expect(err).NotTo(HaveOccurred())
	for name, r := range map[string]Reader{"local": &Local{Storage: storage}, "http": NewHTTP()} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(r.ReadAll(context.Background(), a, 1<<20)).To(Equal(want))

			g.Expect(r.ReadAll(context.Background(), a, 10)).Error().To(MatchError(ContainSubstring("larger than 10 bytes")))

			wrong := a
			wrong.Digest = "sha256:" + "00000000000000000000000000000000000000000000000000000000000000ff"
			g.Expect(r.ReadAll(context.Background(), wrong, 1<<20)).Error().To(MatchError(ContainSubstring("digest")))

			gone := a
			gone.Path = "gitrepository/default/app/gone.tar.gz"
			gone.URL = a.URL[:len(a.URL)-len("abc.tar.gz")] + "gone.tar.gz"
			g.Expect(r.ReadAll(context.Background(), gone, 1<<20)).Error().To(MatchError(ErrNotFound))
		})
	}
}
