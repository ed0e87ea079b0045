package gitserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/windlass-dev/windlass/internal/workdir"
)

// Server serves the bare repositories under Root() over smart HTTP, HTTPS
// and SSH, all on 127.0.0.1 with ports chosen by the kernel. Each protocol
// is started on demand; Stop stops them all. A Server is safe for
// concurrent use.
type Server struct {
	root     string
	home     string // private HOME of every git process
	execPath string

	ctx    context.Context // cancelled by Stop; kills running git processes
	cancel context.CancelFunc

	requests atomic.Int64
	// pathRequests counts the HTTP requests by path, for RequestsFor.
	pathRequests sync.Map // string -> *atomic.Int64
	down         atomic.Bool

	mu           sync.Mutex
	stopped      bool
	basicUser    string
	basicPass    string
	bearerToken  string
	authorized   map[string]ssh.PublicKey // by wire-format bytes
	logOut       io.Writer
	httpURL      string
	httpSrv      *httpListener
	httpsURL     string
	httpsOpts    TLSOptions
	httpsSrv     *httpListener
	ssh          *sshListener
	pki          *certs
	inflightHTTP sync.WaitGroup
	repoLocks    map[string]*sync.Mutex
}

// New returns a Server for the bare repositories under root, creating the
// folder if it is missing. No listener is started until StartHTTP,
// StartHTTPS or StartSSH is called. The caller must call Stop when done.
// Diagnostic output (git-http-backend's stderr, SSH errors) is discarded
// unless SetLogOutput says otherwise.
func New(root string) (*Server, error) {
	execPath, err := gitExecPath()
	if err != nil {
		return nil, err
	}
	if root == "" {
		return nil, errors.New("gitserver: root must not be empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("gitserver: create root: %w", err)
	}
	// Resolve symlinks (e.g. /tmp on some systems) so that path confinement
	// compares like with like.
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	home, err := workdir.MkdirTemp("gitserver-home-")
	if err != nil {
		return nil, fmt.Errorf("gitserver: create private home: %w", err)
	}
	p, err := newCerts()
	if err != nil {
		_ = os.RemoveAll(home)
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		root:       abs,
		home:       home,
		execPath:   execPath,
		ctx:        ctx,
		cancel:     cancel,
		authorized: map[string]ssh.PublicKey{},
		logOut:     io.Discard,
		pki:        p,
		repoLocks:  map[string]*sync.Mutex{},
	}, nil
}

// Root returns the absolute path of the folder that holds the bare
// repositories. A repository named "podinfo.git" lives at
// Root()+"/podinfo.git" and is served at <baseURL>/podinfo.git.
func (s *Server) Root() string { return s.root }

// SetLogOutput sets where diagnostic output goes: the stderr of
// git-http-backend and of SSH git commands, and errors of the listeners.
// The default is io.Discard; NewForTest sends it to t.Logf.
func (s *Server) SetLogOutput(w io.Writer) {
	if w == nil {
		w = io.Discard
	}
	s.mu.Lock()
	s.logOut = w
	s.mu.Unlock()
}

func (s *Server) logWriter() io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logOut
}

func (s *Server) logf(format string, args ...any) {
	fmt.Fprintf(s.logWriter(), "gitserver: "+format+"\n", args...)
}

// SetBasicAuth makes HTTP and HTTPS require HTTP basic authentication with
// user and pass. An empty user turns basic authentication off. When a
// bearer token is also set, either credential is accepted.
func (s *Server) SetBasicAuth(user, pass string) {
	s.mu.Lock()
	s.basicUser, s.basicPass = user, pass
	s.mu.Unlock()
}

// SetBearerToken makes HTTP and HTTPS require the header
// "Authorization: Bearer <token>". An empty token turns it off. When basic
// authentication is also set, either credential is accepted.
func (s *Server) SetBearerToken(token string) {
	s.mu.Lock()
	s.bearerToken = token
	s.mu.Unlock()
}

// AuthorizeSSHKey allows clients holding the private half of pub to
// connect over SSH (public-key authentication; any user name). Until a key
// is authorized, every SSH client is refused.
func (s *Server) AuthorizeSSHKey(pub ssh.PublicKey) {
	s.mu.Lock()
	s.authorized[string(pub.Marshal())] = pub
	s.mu.Unlock()
}

// RevokeSSHKey removes pub from the authorized keys.
func (s *Server) RevokeSSHKey(pub ssh.PublicKey) {
	s.mu.Lock()
	delete(s.authorized, string(pub.Marshal()))
	s.mu.Unlock()
}

// Requests returns how many git protocol requests reached the server: every
// HTTP(S) request, whatever its response (including 401 and 503), plus every
// SSH connection, including refused ones (a git client opens one SSH
// connection, with one session, per clone, fetch or push). Tests compare it
// before and after an action to prove that no clone or fetch happened.
func (s *Server) Requests() int64 { return s.requests.Load() }

// RequestsFor returns how many HTTP requests named the repository name
// (e.g. "app.git"): a test that asserts its repository was never asked for
// is not misled by a request that another test's object, pointing at a
// server that was on the same port before, sends to this one.
func (s *Server) RequestsFor(name string) int64 {
	var n int64
	prefix := "/" + strings.Trim(name, "/") + "/"
	s.pathRequests.Range(func(path, count any) bool {
		if strings.HasPrefix(path.(string)+"/", prefix) {
			n += count.(*atomic.Int64).Load()
		}
		return true
	})
	return n
}

// FetchesOf returns how many HTTP requests fetched objects of the
// repository name (e.g. "app.git"): its git-upload-pack requests, which
// every clone or fetch sends and a listing of its references (a check that
// the remote has not moved) does not.
func (s *Server) FetchesOf(name string) int64 {
	count, ok := s.pathRequests.Load("/" + strings.Trim(name, "/") + "/git-upload-pack")
	if !ok {
		return 0
	}
	return count.(*atomic.Int64).Load()
}

// countHTTP counts an HTTP request, by its path too.
func (s *Server) countHTTP(path string) {
	s.requests.Add(1)
	count, _ := s.pathRequests.LoadOrStore(path, new(atomic.Int64))
	count.(*atomic.Int64).Add(1)
}

// SetDown simulates a host outage without changing ports: while down,
// every HTTP(S) request gets 503 Service Unavailable and every new SSH
// connection is closed before the handshake. Transfers already under way
// are not cut. SetDown(false) brings the host back.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Stop stops every listener, closes open connections, kills running git
// processes and waits (a few seconds at most) for handlers to finish. The
// repositories under Root() are left in place. Stop is idempotent; a
// stopped server cannot be started again.
func (s *Server) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	httpSrv, httpsSrv, sshSrv := s.httpSrv, s.httpsSrv, s.ssh
	s.mu.Unlock()

	s.cancel()
	for _, l := range []*httpListener{httpSrv, httpsSrv} {
		if l != nil {
			l.close()
		}
	}
	if sshSrv != nil {
		sshSrv.close()
	}
	waitTimeout(&s.inflightHTTP, 5*time.Second)
	if sshSrv != nil {
		waitTimeout(&sshSrv.wg, 5*time.Second)
	}
	_ = os.RemoveAll(s.home)
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// httpListener is one running HTTP or HTTPS server.
type httpListener struct {
	srv  *http.Server
	done chan struct{}
}

func (l *httpListener) close() {
	_ = l.srv.Close()
	<-l.done
}

// StartHTTP starts serving smart HTTP on 127.0.0.1 and returns the base URL,
// "http://127.0.0.1:<port>"; a repository named "podinfo.git" is at
// baseURL+"/podinfo.git". Calling it again returns the same URL.
func (s *Server) StartHTTP() (baseURL string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return "", errors.New("gitserver: server is stopped")
	}
	if s.httpSrv != nil {
		return s.httpURL, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("gitserver: listen: %w", err)
	}
	s.httpSrv = s.serveHTTP(ln)
	s.httpURL = "http://" + ln.Addr().String()
	return s.httpURL, nil
}

// TLSOptions configures StartHTTPS.
type TLSOptions struct {
	// RequireClientCert makes the server require a client certificate
	// signed by the server's CA (see ClientCert).
	RequireClientCert bool
}

// StartHTTPS starts serving smart HTTP over TLS on 127.0.0.1 and returns
// the base URL, "https://127.0.0.1:<port>". The server certificate is
// valid for 127.0.0.1, ::1 and localhost and is signed by the server's own
// CA (CACert). Calling it again with the same options returns the same URL.
func (s *Server) StartHTTPS(opts TLSOptions) (baseURL string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return "", errors.New("gitserver: server is stopped")
	}
	if s.httpsSrv != nil {
		if opts != s.httpsOpts {
			return "", errors.New("gitserver: HTTPS already started with other options")
		}
		return s.httpsURL, nil
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{s.pki.serverCert},
	}
	if opts.RequireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = s.pki.ca.Pool
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("gitserver: listen: %w", err)
	}
	s.httpsSrv = s.serveHTTP(tls.NewListener(ln, cfg))
	s.httpsURL = "https://" + ln.Addr().String()
	s.httpsOpts = opts
	return s.httpsURL, nil
}

// HTTPURL returns the base URL of the HTTP listener, or "" if it is not
// started.
func (s *Server) HTTPURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpURL
}

// HTTPSURL returns the base URL of the HTTPS listener, or "" if it is not
// started.
func (s *Server) HTTPSURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpsURL
}

// CACert returns the PEM-encoded certificate of the server's CA, which
// signs the HTTPS server certificate and the client certificates from
// ClientCert. Each Server has its own CA.
func (s *Server) CACert() []byte { return append([]byte(nil), s.pki.ca.PEM...) }

// ClientCert returns a PEM-encoded client certificate and its PEM-encoded
// PKCS #8 private key, signed by the server's CA, for HTTPS servers started
// with RequireClientCert.
func (s *Server) ClientCert() (certPEM, keyPEM []byte) {
	return append([]byte(nil), s.pki.clientCertPEM...), append([]byte(nil), s.pki.clientKeyPEM...)
}

// newErrorLog returns a *log.Logger that writes to the server's log output.
func (s *Server) newErrorLog() *log.Logger {
	return log.New(writerFunc(func(p []byte) (int, error) {
		return s.logWriter().Write(p)
	}), "gitserver: ", 0)
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
