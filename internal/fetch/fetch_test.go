package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/netguard"
)

// storedArtifact archives a small tree into a new storage served over
// HTTP, and returns the storage and the artifact.
func storedArtifact(t *testing.T, g *WithT) (*artifact.Storage, meta.Artifact, *httptest.Server) {
	src := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(src, "deploy"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(src, "deploy", "app.yaml"), []byte("kind: ConfigMap\n"), 0o644)).To(Succeed())

	srv := httptest.NewUnstartedServer(nil)
	storage, err := artifact.New(t.TempDir(), srv.Listener.Addr().String(), time.Minute, 2)
	g.Expect(err).NotTo(HaveOccurred())
	srv.Config.Handler = storage.Handler()
	srv.Start()
	t.Cleanup(srv.Close)

	obj := &metav1.ObjectMeta{Name: "app", Namespace: "default"}
	a := storage.NewArtifactFor("GitRepository", obj, "main@sha1:abc", "abc.tar.gz")
	g.Expect(storage.Archive(&a, src, nil)).To(Succeed())
	return storage, a, srv
}

func TestFetchers(t *testing.T) {
	g := NewWithT(t)
	storage, a, _ := storedArtifact(t, g)
	for name, f := range map[string]Fetcher{"local": &Local{Storage: storage}, "http": NewHTTP()} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			g.Expect(f.Fetch(context.Background(), a, dir)).To(Succeed())
			g.Expect(os.ReadFile(filepath.Join(dir, "deploy", "app.yaml"))).To(Equal([]byte("kind: ConfigMap\n")))

			wrong := a
			wrong.Digest = "sha256:" + "00000000000000000000000000000000000000000000000000000000000000ff"
			g.Expect(f.Fetch(context.Background(), wrong, t.TempDir())).To(MatchError(ContainSubstring("digest")))

			gone := a
			gone.Path = "gitrepository/default/app/gone.tar.gz"
			gone.URL = a.URL[:len(a.URL)-len("abc.tar.gz")] + "gone.tar.gz"
			g.Expect(f.Fetch(context.Background(), gone, t.TempDir())).To(MatchError(ErrNotFound))
		})
	}
}

func TestHTTPRefusesOversizedArtifacts(t *testing.T) {
	g := NewWithT(t)
	_, a, _ := storedArtifact(t, g)
	f := NewHTTP()
	f.MaxSize = 10
	g.Expect(f.Fetch(context.Background(), a, t.TempDir())).To(MatchError(ContainSubstring("larger than 10 bytes")))
}

func TestHTTPRetriesServerErrorsAndRedactsURLs(t *testing.T) {
	g := NewWithT(t)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	f := NewHTTP()
	f.Retries = 2
	a := meta.Artifact{URL: "http://user:secret@" + srv.Listener.Addr().String() + "/x.tar.gz?token=t0k", Digest: "sha256:00"}
	err := f.Fetch(context.Background(), a, t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("503")))
	g.Expect(err.Error()).NotTo(ContainSubstring("secret"))
	g.Expect(err.Error()).NotTo(ContainSubstring("t0k"))
	g.Expect(calls.Load()).To(BeEquivalentTo(3))
}

// TestHTTPRefusesLinkLocalAndMetadata: an artifact URL of a link-local
// address or a cloud metadata endpoint (which a tenant's ExternalArtifact
// may name) is refused before any connection.
func TestHTTPRefusesLinkLocalAndMetadata(t *testing.T) {
	for _, url := range []string{
		"http://169.254.169.254/latest/meta-data/x.tar.gz",
		"http://[fe80::1]:8080/x.tar.gz",
		"http://100.100.100.200/x.tar.gz",
		"http://[fd00:ec2::254]/x.tar.gz",
	} {
		t.Run(url, func(t *testing.T) {
			g := NewWithT(t)
			err := NewHTTP().Fetch(context.Background(), meta.Artifact{URL: url, Digest: "sha256:00"}, t.TempDir())
			g.Expect(err).To(MatchError(netguard.ErrLinkLocal))
		})
	}
}

// TestHTTPRoute: a fetcher with a Route downloads an artifact from the URL
// the Route gives (the replica that stores it), not from the artifact's
// own (the address the replicas share), and finds nothing when the Route
// knows no place that serves it yet.
func TestHTTPRoute(t *testing.T) {
	g := NewWithT(t)
	_, a, srv := storedArtifact(t, g)
	shared := a
	shared.URL = "http://source-controller.windlass.svc/" + a.Path
	var routed []string
	f := NewHTTP()
	f.Route = func(_ context.Context, a meta.Artifact) string {
		routed = append(routed, a.URL)
		return srv.URL + "/" + a.Path
	}
	dir := t.TempDir()
	g.Expect(f.Fetch(context.Background(), shared, dir)).To(Succeed())
	g.Expect(os.ReadFile(filepath.Join(dir, "deploy", "app.yaml"))).To(Equal([]byte("kind: ConfigMap\n")))
	g.Expect(routed).To(Equal([]string{shared.URL}))

	f.Route = func(context.Context, meta.Artifact) string { return "" }
	g.Expect(f.Fetch(context.Background(), shared, t.TempDir())).To(MatchError(ErrNotFound))
	_, err := f.ReadAll(context.Background(), shared, 1<<20)
	g.Expect(err).To(MatchError(ErrNotFound))
}
