package main

import (
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// cloneCounter is a reverse proxy in front of the loopback git server that
// counts fetches. A smart-HTTP fetch or clone is one POST to
// <repo>/git-upload-pack (the pack negotiation and transfer); merely
// listing the remote's references (GET <repo>/info/refs) is not counted.
type cloneCounter struct {
	srv    *http.Server
	URL    string
	clones atomic.Int64
}

// startCloneCounter starts a proxy to the git server at target on a free
// loopback port.
func startCloneCounter(target string) (*cloneCounter, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &cloneCounter{URL: "http://" + ln.Addr().String()}
	proxy := httputil.NewSingleHostReverseProxy(u)
	c.srv = &http.Server{
		ReadHeaderTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
				c.clones.Add(1)
			}
			proxy.ServeHTTP(w, r)
		}),
	}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// Clones returns the number of upload-pack requests proxied so far.
func (c *cloneCounter) Clones() int64 { return c.clones.Load() }

// Close stops the proxy.
func (c *cloneCounter) Close() { _ = c.srv.Close() }

// fileState is what a storage snapshot records of one file.
type fileState struct {
	modTime time.Time
	size    int64
}

// snapshotStorage records the modification time and size of every regular
// file under dir (the controller's artifact storage).
func snapshotStorage(dir string) (map[string]fileState, error) {
	files := map[string]fileState{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		files[path] = fileState{modTime: info.ModTime(), size: info.Size()}
		return nil
	})
	return files, err
}

// writtenFiles compares two storage snapshots and returns the files that
// were created, or whose modification time or size changed, in between.
// Files removed (garbage collection) are not writes and are not returned.
func writtenFiles(before, after map[string]fileState) []string {
	var written []string
	for path, a := range after {
		if b, ok := before[path]; !ok || !b.modTime.Equal(a.modTime) || b.size != a.size {
			written = append(written, path)
		}
	}
	return written
}
