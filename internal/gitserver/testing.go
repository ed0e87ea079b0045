package gitserver

import (
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// NewForTest returns a Server whose root is a fresh t.TempDir(). Its
// diagnostic output goes to t.Logf (shown for failed tests and with -v),
// and t.Cleanup stops it. It fails the test if the server cannot be
// created.
func NewForTest(t testing.TB) *Server {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	lw := &testLogWriter{t: t}
	s.SetLogOutput(lw)
	t.Cleanup(func() {
		s.Stop()
		lw.close()
	})
	return s
}

// testLogWriter forwards lines to t.Logf until it is closed, so that late
// writes from server goroutines never reach a finished test.
type testLogWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// MustStartHTTP is StartHTTP that fails the test on error.
func (s *Server) MustStartHTTP(t testing.TB) string {
	t.Helper()
	u, err := s.StartHTTP()
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	return u
}

// MustStartHTTPS is StartHTTPS that fails the test on error.
func (s *Server) MustStartHTTPS(t testing.TB, opts TLSOptions) string {
	t.Helper()
	u, err := s.StartHTTPS(opts)
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	return u
}

// MustStartSSH is StartSSH that fails the test on error.
func (s *Server) MustStartSSH(t testing.TB) string {
	t.Helper()
	u, err := s.StartSSH()
	if err != nil {
		t.Fatalf("gitserver: %v", err)
	}
	return u
}

// MustInitRepo is InitRepo that fails the test on error.
func (s *Server) MustInitRepo(t testing.TB, name, branch string) *Repo {
	t.Helper()
	r, err := s.InitRepo(name, branch)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}

// MustCommit is Commit that fails the test on error.
func (r *Repo) MustCommit(t testing.TB, branch string, files map[string]string, msg string) string {
	t.Helper()
	sha, err := r.Commit(branch, files, msg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return sha
}

// AuthorizedSSHKeyForTest generates an SSH client key with GenerateSSHKey
// (failing the test on error), authorizes it on s, and returns the signer
// and the OpenSSH PEM private key.
func (s *Server) AuthorizedSSHKeyForTest(t testing.TB) (signer ssh.Signer, privateKeyPEM []byte) {
	t.Helper()
	signer, privateKeyPEM, err := GenerateSSHKey()
	if err != nil {
		t.Fatalf("%v", err)
	}
	s.AuthorizeSSHKey(signer.PublicKey())
	return signer, privateKeyPEM
}
