package artifact

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// serve starts s on an ephemeral loopback port and returns its base URL;
// the server is shut down when the test ends.
func serve(t *testing.T, s *Storage) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// do sends a request with a raw, unnormalised path and returns the status
// and body.
func do(t *testing.T, method, base, rawPath string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = rawPath
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

func TestHandlerDownload(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := storedArtifact(t, s, "8f3e.tar.gz")
	base := serve(t, s)

	// Download through the advertised URL's path, as a consumer would.
	url := strings.Replace(a.URL, "http://"+testAddr, base, 1)
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/gzip"))
	g.Expect(resp.ContentLength).To(Equal(*a.Size))
	digest, err := Digest(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(Equal(a.Digest))

	status, hdr, body := do(t, http.MethodHead, base, "/"+a.Path)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(body).To(BeEmpty())
	g.Expect(hdr.Get("Content-Length")).To(Equal(fmt.Sprint(*a.Size)))

	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Range", "bytes=0-9")
	rresp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer rresp.Body.Close()
	g.Expect(rresp.StatusCode).To(Equal(http.StatusPartialContent))
	part, _ := io.ReadAll(rresp.Body)
	g.Expect(part).To(HaveLen(10))
}

func TestHandlerEscapedURL(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := s.NewArtifactFor("Bucket", obj("default", "b"), "r", "a b#c.tgz")
	g.Expect(s.Copy(&a, strings.NewReader("content"))).To(Succeed())
	base := serve(t, s)
	resp, err := http.Get(strings.Replace(a.URL, "http://"+testAddr, base, 1))
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, _ := io.ReadAll(resp.Body)
	g.Expect(string(body)).To(Equal("content"))
}

func TestHandlerRefusals(t *testing.T) {
	s := newStorage(t)
	a := storedArtifact(t, s, "a.tar.gz")
	dir := filepath.Dir(s.LocalPath(a))
	if err := os.WriteFile(filepath.Join(dir, tempPrefix+"123"), []byte("partial"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.BasePath(), "stray.txt"), []byte("stray"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "subdir"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	base := serve(t, s)

	tests := []struct {
		name   string
		method string
		path   string
		want   int
	}{
		{name: "PUT", method: http.MethodPut, path: "/" + a.Path, want: http.StatusMethodNotAllowed},
		{name: "DELETE", method: http.MethodDelete, path: "/" + a.Path, want: http.StatusMethodNotAllowed},
		{name: "POST", method: http.MethodPost, path: "/" + a.Path, want: http.StatusMethodNotAllowed},
		{name: "root listing", method: http.MethodGet, path: "/", want: http.StatusNotFound},
		{name: "kind listing", method: http.MethodGet, path: "/gitrepository/", want: http.StatusNotFound},
		{name: "object directory listing", method: http.MethodGet, path: "/gitrepository/default/podinfo/", want: http.StatusNotFound},
		{name: "object directory without slash", method: http.MethodGet, path: "/gitrepository/default/podinfo", want: http.StatusNotFound},
		{name: "directory at artifact depth", method: http.MethodGet, path: "/gitrepository/default/podinfo/subdir", want: http.StatusNotFound},
		{name: "temporary file", method: http.MethodGet, path: "/gitrepository/default/podinfo/" + tempPrefix + "123", want: http.StatusNotFound},
		{name: "file outside the artifact layout", method: http.MethodGet, path: "/stray.txt", want: http.StatusNotFound},
		{name: "missing artifact", method: http.MethodGet, path: "/gitrepository/default/podinfo/missing.tar.gz", want: http.StatusNotFound},
		{name: "dot-dot traversal", method: http.MethodGet, path: "/gitrepository/default/../../../../etc/passwd", want: http.StatusNotFound},
		{name: "encoded traversal", method: http.MethodGet, path: "/gitrepository/default/podinfo/..%2f..%2f..%2f..%2fetc%2fpasswd", want: http.StatusNotFound},
		{name: "symlink out of storage", method: http.MethodGet, path: "/gitrepository/default/podinfo/passwd", want: http.StatusNotFound},
		{name: "double slash", method: http.MethodGet, path: "//gitrepository/default/podinfo/a.tar.gz", want: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, hdr, body := do(t, tt.method, base, tt.path)
			g.Expect(status).To(Equal(tt.want))
			g.Expect(body).NotTo(ContainSubstring("root:"))
			g.Expect(body).NotTo(ContainSubstring("partial"))
			g.Expect(body).NotTo(ContainSubstring("<a href"))
			if tt.want == http.StatusMethodNotAllowed {
				g.Expect(hdr.Get("Allow")).To(Equal("GET, HEAD"))
			}
		})
	}
	NewWithT(t).Expect(s.Verify(a)).To(Succeed(), "refused writes changed nothing")
}

func TestStartAndGracefulShutdown(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := storedArtifact(t, s, "a.tar.gz")

	// Reserve a free port, then let Start listen on it.
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	addr := addrs[0]

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx, addr) }()
	g.Eventually(func() (int, error) {
		resp, err := http.Get("http://" + addr + "/" + a.Path)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}).WithTimeout(5 * time.Second).Should(Equal(http.StatusOK))

	cancel()
	g.Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
	_, err = http.Get("http://" + addr + "/" + a.Path)
	g.Expect(err).To(HaveOccurred(), "the server stopped listening")
}

func TestStartInvalidAddress(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	err = s.Start(context.Background(), ln.Addr().String())
	g.Expect(err).To(MatchError(ContainSubstring("listening on")))
}
