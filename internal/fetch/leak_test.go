package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// TestNoLeak_HTTPAndLocalFetch (security row 44) fetches artifacts, and
// fails to, many times: over HTTP a good artifact (Fetch and ReadAll), one
// over MaxSize, one of the wrong digest, a corrupt archive whose digest
// matches, a missing one (404), a server answering 500, a server that is
// down and one that stalls until the deadline; from the storage a good and
// a corrupt artifact. Afterwards the process holds no more open files and
// goroutines than before (see testutil.ExpectNoLeaks), and its work
// folder, where downloads go, holds what it held before.
func TestNoLeak_HTTPAndLocalFetch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	storage, good, _ := storedArtifact(t, g)
	corrupt := storage.NewArtifactFor("GitRepository", &metav1.ObjectMeta{Name: "corrupt", Namespace: "default"}, "main@sha1:abc", "corrupt.tar.gz")
	g.Expect(storage.Copy(&corrupt, strings.NewReader("not a tar.gz"))).To(Succeed())
	wrong := good
	wrong.Digest = "sha256:" + strings.Repeat("0", 64)
	gone := good
	gone.URL = strings.TrimSuffix(good.URL, "abc.tar.gz") + "gone.tar.gz"

	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stalls.tar.gz" {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte{0x1f})
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		http.Error(w, "the storage broke", http.StatusInternalServerError)
	}))
	t.Cleanup(hostile.Close)
	broken := meta.Artifact{URL: hostile.URL + "/broken.tar.gz", Digest: good.Digest}
	stalls := meta.Artifact{URL: hostile.URL + "/stalls.tar.gz", Digest: good.Digest}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	unreachable := meta.Artifact{URL: down.URL + "/x.tar.gz", Digest: good.Digest}

	fetcher := NewHTTP()
	fetcher.Retries = 0 // a retry waits 500ms, and opens nothing more
	small := NewHTTP()
	small.Retries, small.MaxSize = 0, 10
	local := &Local{Storage: storage}

	work, err := workdir.Dir()
	g.Expect(err).NotTo(HaveOccurred())
	before, err := os.ReadDir(work)
	g.Expect(err).NotTo(HaveOccurred())

	round := func() {
		g.Expect(fetcher.Fetch(ctx, good, t.TempDir())).To(Succeed())
		data, err := fetcher.ReadAll(ctx, good, 1<<20)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(data).To(HaveLen(int(*good.Size)))
		g.Expect(local.Fetch(ctx, good, t.TempDir())).To(Succeed())

		g.Expect(small.Fetch(ctx, good, t.TempDir())).To(MatchError(ContainSubstring("larger than 10 bytes")))
		_, err = fetcher.ReadAll(ctx, good, 10)
		g.Expect(err).To(MatchError(ContainSubstring("larger than 10 bytes")))
		g.Expect(fetcher.Fetch(ctx, wrong, t.TempDir())).To(MatchError(ContainSubstring("has digest " + good.Digest)))
		g.Expect(fetcher.Fetch(ctx, corrupt, t.TempDir())).To(MatchError(ContainSubstring("gzip")))
		g.Expect(local.Fetch(ctx, corrupt, t.TempDir())).To(MatchError(ContainSubstring("gzip")))
		g.Expect(fetcher.Fetch(ctx, gone, t.TempDir())).To(MatchError(ErrNotFound))
		g.Expect(fetcher.Fetch(ctx, broken, t.TempDir())).To(MatchError(ContainSubstring("500 Internal Server Error")))
		g.Expect(fetcher.Fetch(ctx, unreachable, t.TempDir())).To(MatchError(ContainSubstring("connection refused")))

		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		g.Expect(fetcher.Fetch(short, stalls, t.TempDir())).To(MatchError(context.DeadlineExceeded))
	}
	// NewHTTP's clients use http.DefaultTransport: its idle connections
	// are the pool's, not a leak.
	closeIdle := func() { http.DefaultTransport.(*http.Transport).CloseIdleConnections() }
	testutil.ExpectNoLeaks(t, g, round, closeIdle)
	g.Expect(os.ReadDir(work)).To(HaveLen(len(before)), "no download is left in the work folder")
}
