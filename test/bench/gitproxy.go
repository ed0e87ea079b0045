package main

import (
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// countingProxy is a reverse proxy in front of a loopback source server
// that counts the requests that download content, by what they download
// (see countGitFetch and countObjectGet). It keeps the Host header of each
// request, so that signatures over it (S3's SigV4) still hold.
type countingProxy struct {
	srv *http.Server
	// URL is the proxy's base URL, http://127.0.0.1:PORT.
	URL string

	classify func(*http.Request) string
	mu       sync.Mutex
	counts   map[string]int64
}

// startCountingProxy starts a proxy to the server at target on a free
// loopback port. classify names what a request downloads, one of labels,
// or returns "" for a request that is not counted.
func startCountingProxy(target string, classify func(*http.Request) string, labels ...string) (*countingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &countingProxy{URL: "http://" + ln.Addr().String(), classify: classify, counts: map[string]int64{}}
	for _, l := range labels {
		c.counts[l] = 0
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	c.srv = &http.Server{
		ReadHeaderTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.count(r)
			proxy.ServeHTTP(w, r)
		}),
	}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// count records r when classify names it.
func (c *countingProxy) count(r *http.Request) {
	if what := c.classify(r); what != "" {
		c.mu.Lock()
		c.counts[what]++
		c.mu.Unlock()
	}
}

// Counts returns the requests counted so far, by what they download.
func (c *countingProxy) Counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Host returns the proxy's host:port.
func (c *countingProxy) Host() string { return strings.TrimPrefix(c.URL, "http://") }

// Close stops the proxy.
func (c *countingProxy) Close() { _ = c.srv.Close() }

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
