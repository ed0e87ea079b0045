package oci

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestNoLeak_OpenLayerAndPull (security row 44) opens layers and pulls
// artifacts (OpenLayer streamed through archive.Extract), and fails to,
// many times: a layer read whole and one closed early, a pull, a layer
// declared over the limit, one that unpacks over the limit, a tar-slip
// layer, and from a hostile registry a layer that never ends, tampered
// content, a missing blob and a stream that stalls until the deadline.
// Afterwards the process holds no more open files and goroutines than
// before (see testutil.ExpectNoLeaks).
func TestNoLeak_OpenLayerAndPull(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	host := testutil.StartRegistry(t, "", "")
	tag := func(t string) name.Tag {
		ref, err := ParseTag("oci://"+host+"/app:"+t, anonymous)
		g.Expect(err).NotTo(HaveOccurred())
		return ref
	}
	good := craftLayer(t, file("a.yaml", "a: 1\n"), file("b.yaml", strings.Repeat("b", 10000)))
	goodDigest := pushRaw(t, tag("good"), good)
	pushRaw(t, tag("slip"), craftLayer(t, file("ok.yaml", "ok: true\n"), file("../x", "escaped")))
	pushRaw(t, tag("bomb"), craftLayer(t, file("big", strings.Repeat("0", 2<<20))))
	m, err := GetManifest(ctx, tag("good").Context().Digest(goodDigest.String()), anonymous)
	g.Expect(err).NotTo(HaveOccurred())
	layer, err := SelectLayer(m, string(ContentMediaType))
	g.Expect(err).NotTo(HaveOccurred())

	declared := v1.Descriptor{MediaType: ContentMediaType, Size: int64(len(hostileLayer)), Digest: sha256Of(hostileLayer)}
	evil := &hostileRegistry{manifest: artifactManifest(t, declared), blob: func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v2/forever/"):
			streamForever(w, r)
		case strings.HasPrefix(r.URL.Path, "/v2/tampered/"):
			serveBytes(bytes.ToUpper(hostileLayer), len(hostileLayer))(w, r)
		case strings.HasPrefix(r.URL.Path, "/v2/slow/"):
			trickle(w, r)
		default:
			http.NotFound(w, r)
		}
	}}
	evilHost := evil.start(t)
	evilRepo := func(path string) name.Repository {
		repo, err := name.NewRepository(evilHost + "/" + path)
		g.Expect(err).NotTo(HaveOccurred())
		return repo
	}

	round := func() {
		rc, err := OpenLayer(ctx, tag("good").Context(), layer, 0, anonymous)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(io.ReadAll(rc)).To(Equal(good))
		g.Expect(rc.Close()).To(Succeed())

		rc, err = OpenLayer(ctx, tag("good").Context(), layer, 0, anonymous)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = rc.Read(make([]byte, 10))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rc.Close()).To(Succeed(), "Close reads the rest and verifies it")

		_, err = OpenLayer(ctx, tag("good").Context(), layer, layer.Size-1, anonymous)
		g.Expect(err).To(MatchError(ErrTooLarge))

		out := filepath.Join(t.TempDir(), "out")
		_, err = Pull(ctx, tag("good"), out, 0, anonymous)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(filepath.Join(out, "b.yaml")).To(BeARegularFile())

		_, err = Pull(ctx, tag("good"), t.TempDir(), 10, anonymous)
		g.Expect(err).To(MatchError(ContainSubstring("more than the limit of 10")))

		_, err = Pull(ctx, tag("bomb"), filepath.Join(t.TempDir(), "out"), 1<<20, anonymous)
		g.Expect(err).To(MatchError(archive.ErrTooLarge))

		_, err = Pull(ctx, tag("slip"), filepath.Join(t.TempDir(), "out"), 0, anonymous)
		g.Expect(err).To(MatchError(archive.ErrUnsafeEntry))

		for path, want := range map[string]error{"forever": ErrTooLarge, "tampered": ErrDigestMismatch} {
			rc, err := OpenLayer(ctx, evilRepo(path), declared, 0, anonymous)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = io.ReadAll(rc)
			g.Expect(err).To(MatchError(want))
			g.Expect(rc.Close()).To(MatchError(want))
		}

		_, err = OpenLayer(ctx, evilRepo("gone"), declared, 0, anonymous)
		g.Expect(err).To(MatchError(ContainSubstring("404")))

		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		rc, err = OpenLayer(short, evilRepo("slow"), declared, 0, anonymous)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = io.ReadAll(rc)
		g.Expect(err).To(MatchError(context.DeadlineExceeded))
		g.Expect(rc.Close()).To(MatchError(context.DeadlineExceeded))
	}
	// Every call goes through remote.DefaultTransport: its idle
	// connections are the pool's, not a leak.
	closeIdle := func() { remote.DefaultTransport.(*http.Transport).CloseIdleConnections() }
	testutil.ExpectNoLeaks(t, g, round, closeIdle)
}
