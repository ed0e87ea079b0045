package gitserver

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"path/filepath"
	"strings"
	"time"
)

// maxBufferedBody bounds the request bodies sent without a Content-Length
// (git sends large pushes chunked), which are buffered in memory because
// net/http/cgi refuses chunked bodies.
const maxBufferedBody = 512 << 20

// serveHTTP serves the git handler on ln until the returned listener is
// closed.
func (s *Server) serveHTTP(ln net.Listener) *httpListener {
	srv := &http.Server{
		Handler:           http.HandlerFunc(s.handleHTTP),
		ErrorLog:          s.newErrorLog(),
		ReadHeaderTimeout: 30 * time.Second,
	}
	l := &httpListener{srv: srv, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_ = srv.Serve(ln)
	}()
	return l
}

// handleHTTP checks the outage switch and the credentials, then hands the
// request to git-http-backend.
func (s *Server) handleHTTP(w http.ResponseWriter, r *http.Request) {
	s.countHTTP(r.URL.Path)

	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		http.Error(w, "gitserver: stopped", http.StatusServiceUnavailable)
		return
	}
	s.inflightHTTP.Add(1)
	user, pass, token := s.basicUser, s.basicPass, s.bearerToken
	s.mu.Unlock()
	defer s.inflightHTTP.Done()

	if s.down.Load() {
		http.Error(w, "gitserver: host is down", http.StatusServiceUnavailable)
		return
	}

	remoteUser, ok := authenticate(r, user, pass, token)
	if !ok {
		if user != "" {
			w.Header().Add("WWW-Authenticate", `Basic realm="gitserver"`)
		}
		if token != "" {
			w.Header().Add("WWW-Authenticate", `Bearer realm="gitserver"`)
		}
		http.Error(w, "gitserver: authentication required", http.StatusUnauthorized)
		return
	}
	r.Header.Del("Authorization")

	// net/http/cgi refuses chunked bodies; buffer them so that large
	// pushes work.
	if r.ContentLength < 0 || len(r.TransferEncoding) > 0 {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBufferedBody+1))
		if err != nil {
			http.Error(w, "gitserver: read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxBufferedBody {
			http.Error(w, "gitserver: request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
	}

	env := append(baseEnv(s.home),
		"GIT_PROJECT_ROOT="+s.root,
		"GIT_HTTP_EXPORT_ALL=1",
	)
	if remoteUser != "" {
		env = append(env, "REMOTE_USER="+remoteUser)
	}
	logOut := s.logWriter()
	h := &cgi.Handler{
		Path:   filepath.Join(s.execPath, "git-http-backend"),
		Dir:    s.root,
		Env:    env,
		Stderr: logOut,
		Logger: s.newErrorLog(),
	}
	h.ServeHTTP(w, r)
}

// authenticate checks r against the configured credentials and returns the
// REMOTE_USER to pass to git-http-backend. With no credentials configured
// every request is accepted anonymously.
func authenticate(r *http.Request, user, pass, token string) (remoteUser string, ok bool) {
	if user == "" && token == "" {
		return "", true
	}
	if user != "" {
		if u, p, found := r.BasicAuth(); found && equal(u, user) && equal(p, pass) {
			return u, true
		}
	}
	if token != "" {
		const prefix = "bearer "
		h := r.Header.Get("Authorization")
		if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) &&
			equal(strings.TrimSpace(h[len(prefix):]), token) {
			return "token", true
		}
	}
	return "", false
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// String describes the server and its running listeners.
func (s *Server) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	if s.httpURL != "" {
		parts = append(parts, s.httpURL)
	}
	if s.httpsURL != "" {
		parts = append(parts, s.httpsURL)
	}
	if s.ssh != nil {
		parts = append(parts, s.ssh.url)
	}
	return fmt.Sprintf("gitserver(%s; %s)", s.root, strings.Join(parts, ", "))
}
