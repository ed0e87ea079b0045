package artifact

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/httpserver"
)

// shutdownTimeout bounds how long Serve waits for downloads in flight once
// its context is done.
const shutdownTimeout = 30 * time.Second

// Handler returns a read-only HTTP file server of the storage. It answers
// GET and HEAD only (405 otherwise), serves only artifact files, that is
// regular files at <kind>/<namespace>/<name>/<file>, and answers 404 for
// anything else: directories (no listings), temporary files and other
// dot-files, and paths that are not artifact paths. Range and conditional
// requests are supported. A deferred artifact (see Defer) is asked for
// and served once its source stored it (see Restore).
func (s *Storage) Handler() http.Handler {
	return http.HandlerFunc(s.serveHTTP)
}

// serveHTTP implements Handler.
func (s *Storage) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/")
	lp, err := s.localPath(p)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(lp)
	if errors.Is(err, os.ErrNotExist) && s.Restore(r.Context(), meta.Artifact{Path: p}) {
		f, err = os.Open(lp)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if strings.HasSuffix(fi.Name(), ".gz") || strings.HasSuffix(fi.Name(), ".tgz") {
		w.Header().Set("Content-Type", "application/gzip")
	}
	http.ServeContent(w, r, filepath.Base(lp), fi.ModTime(), f)
}

// Server returns an HTTP server of Handler for addr, with timeouts that
// suit large downloads.
func (s *Storage) Server(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
}

// Start listens on addr and serves the storage until ctx is done, then shuts
// down gracefully.
func (s *Storage) Start(ctx context.Context, addr string) error {
	return s.StartWith(ctx, addr, s.Handler())
}

// StartWith listens on addr and serves handler, which serves the storage
// (Handler, wrapped), until ctx is done, then shuts down gracefully.
func (s *Storage) StartWith(ctx context.Context, addr string, handler http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s for artifact storage: %w", addr, err)
	}
	srv := s.Server(ln.Addr().String())
	srv.Handler = handler
	return serveHTTP(ctx, srv, ln)
}

// Serve serves the storage on ln until ctx is done, then shuts down
// gracefully, waiting up to 30 seconds for downloads in flight. It closes
// ln. A nil return means a clean shutdown.
func (s *Storage) Serve(ctx context.Context, ln net.Listener) error {
	return serveHTTP(ctx, s.Server(ln.Addr().String()), ln)
}

// serveHTTP serves srv on ln until ctx is done (see Serve).
func serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener) error {
	if err := httpserver.Serve(ctx, srv, ln, shutdownTimeout); err != nil {
		return fmt.Errorf("serving artifact storage: %w", err)
	}
	return nil
}
