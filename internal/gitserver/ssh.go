package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// handshakeTimeout bounds the SSH handshake of a connection.
const handshakeTimeout = 30 * time.Second

// sshListener is the running SSH server.
type sshListener struct {
	ln         net.Listener
	url        string
	hostKey    ssh.PublicKey
	knownHosts []byte

	wg     sync.WaitGroup // accept loop and connection handlers
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

// StartSSH starts an SSH server on 127.0.0.1 and returns its base URL,
// "ssh://git@127.0.0.1:<port>"; a repository named "podinfo.git" is at
// baseURL+"/podinfo.git". The server has a fresh ed25519 host key (see
// KnownHosts and HostKey), accepts only public-key authentication with keys
// given to AuthorizeSSHKey (any user name), and runs git-upload-pack and
// git-receive-pack for repositories under Root(). Calling it again returns
// the same URL.
func (s *Server) StartSSH() (baseURL string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return "", errors.New("gitserver: server is stopped")
	}
	if s.ssh != nil {
		return s.ssh.url, nil
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("gitserver: generate host key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return "", fmt.Errorf("gitserver: host key: %w", err)
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: s.checkSSHKey,
		ServerVersion:     "SSH-2.0-gitserver",
	}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("gitserver: listen: %w", err)
	}
	addr := ln.Addr().String()
	l := &sshListener{
		ln:         ln,
		url:        "ssh://git@" + addr,
		hostKey:    signer.PublicKey(),
		knownHosts: []byte(knownhosts.Line([]string{addr}, signer.PublicKey()) + "\n"),
		conns:      map[net.Conn]struct{}{},
	}
	l.wg.Add(1)
	go s.acceptSSH(l, cfg)
	s.ssh = l
	return l.url, nil
}

// SSHURL returns the base URL of the SSH server, or "" if it is not
// started.
func (s *Server) SSHURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ssh == nil {
		return ""
	}
	return s.ssh.url
}

// KnownHosts returns a known_hosts line for the SSH server's host key,
// "[127.0.0.1]:<port> ssh-ed25519 AAAA...\n", or nil before StartSSH.
func (s *Server) KnownHosts() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ssh == nil {
		return nil
	}
	return append([]byte(nil), s.ssh.knownHosts...)
}

// HostKey returns the SSH server's public host key, or nil before StartSSH.
func (s *Server) HostKey() ssh.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ssh == nil {
		return nil
	}
	return s.ssh.hostKey
}

// GenerateSSHKey generates an ed25519 SSH client key. It returns a signer
// (pass signer.PublicKey() to AuthorizeSSHKey) and the private key in
// OpenSSH PEM format, as stored in an "identity" file or Secret key.
func GenerateSSHKey() (signer ssh.Signer, privateKeyPEM []byte, err error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: generate SSH key: %w", err)
	}
	signer, err = ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: SSH key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: marshal SSH key: %w", err)
	}
	return signer, pem.EncodeToMemory(block), nil
}

func (s *Server) checkSSHKey(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	s.mu.Lock()
	_, ok := s.authorized[string(key.Marshal())]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("gitserver: public key not authorized")
	}
	return &ssh.Permissions{Extensions: map[string]string{"pubkey-fp": ssh.FingerprintSHA256(key)}}, nil
}

func (s *Server) acceptSSH(l *sshListener, cfg *ssh.ServerConfig) {
	defer l.wg.Done()
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.requests.Add(1)
		if s.down.Load() {
			_ = conn.Close()
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = conn.Close()
			return
		}
		l.conns[conn] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			defer func() {
				l.mu.Lock()
				delete(l.conns, conn)
				l.mu.Unlock()
				_ = conn.Close()
			}()
			s.serveSSHConn(conn, cfg)
		}()
	}
}

func (l *sshListener) close() {
	l.mu.Lock()
	l.closed = true
	conns := make([]net.Conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	_ = l.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}

func (s *Server) serveSSHConn(conn net.Conn, cfg *ssh.ServerConfig) {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	sconn, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		s.logf("ssh: handshake with %s: %v", conn.RemoteAddr(), err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	defer sconn.Close()
	go ssh.DiscardRequests(reqs)

	var sessions sync.WaitGroup
	defer sessions.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels are supported")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			s.logf("ssh: accept channel: %v", err)
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			s.serveSSHSession(ch, chReqs)
		}()
	}
}

// serveSSHSession waits for an "exec" request for git-upload-pack or
// git-receive-pack, runs it, and reports its exit status.
func (s *Server) serveSSHSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var gitProtocol string
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			ok := ssh.Unmarshal(req.Payload, &kv) == nil && kv.Name == "GIT_PROTOCOL"
			if ok {
				gitProtocol = kv.Value
			}
			_ = req.Reply(ok, nil)
		case "exec":
			var payload struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			service, arg, err := parseGitCommand(payload.Command)
			var repoPath string
			if err == nil {
				repoPath, err = confine(s.root, arg)
			}
			if err != nil {
				s.logf("ssh: refused command %q: %v", payload.Command, err)
				_, _ = fmt.Fprintf(ch.Stderr(), "gitserver: %v\n", err)
				_ = req.Reply(false, nil)
				go ssh.DiscardRequests(reqs)
				return
			}
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			code := s.runSSHGit(ch, service, arg, repoPath, gitProtocol)
			_ = ch.CloseWrite()
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{code}))
			return
		default:
			// pty-req, shell, subsystem, ...: not offered.
			_ = req.Reply(false, nil)
		}
	}
}

// runSSHGit runs the git service for repoPath with its stdio wired to the
// channel and returns its exit code.
func (s *Server) runSSHGit(ch ssh.Channel, service, arg, repoPath string, gitProtocol string) uint32 {
	if fi, err := os.Stat(repoPath); err != nil || !fi.IsDir() {
		_, _ = fmt.Fprintf(ch.Stderr(), "fatal: '%s' does not appear to be a git repository\n", arg)
		return 128
	}
	cmd := exec.CommandContext(s.ctx, filepath.Join(s.execPath, service), repoPath)
	cmd.Dir = s.root
	cmd.Env = baseEnv(s.home)
	if gitProtocol != "" {
		cmd.Env = append(cmd.Env, "GIT_PROTOCOL="+gitProtocol)
	}
	cmd.Stdout = ch
	cmd.Stderr = io.MultiWriter(ch.Stderr(), writerFunc(func(p []byte) (int, error) {
		_, _ = s.logWriter().Write(p)
		return len(p), nil
	}))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		s.logf("ssh: %s: %v", service, err)
		return 128
	}
	if err := cmd.Start(); err != nil {
		s.logf("ssh: start %s: %v", service, err)
		_, _ = fmt.Fprintf(ch.Stderr(), "gitserver: cannot run %s\n", service)
		return 128
	}
	// Not part of cmd.Wait: the client may never send EOF, and the copy
	// ends when the channel closes.
	go func() {
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	err = cmd.Wait()
	if err == nil {
		return 0
	}
	if code := exitCode(err); code > 0 {
		return uint32(code)
	}
	s.logf("ssh: %s: %v", service, err)
	return 255
}

// parseGitCommand parses an SSH exec command such as
// "git-upload-pack '/podinfo.git'" (or "git upload-pack ...") into the
// service name and its unquoted path argument. Only git-upload-pack and
// git-receive-pack are allowed.
func parseGitCommand(command string) (service, path string, err error) {
	command = strings.TrimSpace(command)
	verb, rest, _ := strings.Cut(command, " ")
	if verb == "git" {
		var sub string
		sub, rest, _ = strings.Cut(strings.TrimLeft(rest, " "), " ")
		verb = "git-" + sub
	}
	switch verb {
	case "git-upload-pack", "git-receive-pack":
	default:
		return "", "", fmt.Errorf("command not allowed: %q", verb)
	}
	path, err = shellUnquote(strings.TrimSpace(rest))
	if err != nil {
		return "", "", err
	}
	if path == "" {
		return "", "", errors.New("missing repository path")
	}
	return verb, path, nil
}

// shellUnquote parses exactly one POSIX shell word made of unquoted
// characters, 'single-quoted' strings, "double-quoted" strings and
// backslash escapes, as git's sq_quote produces (e.g. 'it'\”s').
func shellUnquote(word string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(word); i++ {
		c := word[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(word[i+1:], '\'')
			if end < 0 {
				return "", errors.New("unterminated single quote")
			}
			b.WriteString(word[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			i++
			for ; i < len(word) && word[i] != '"'; i++ {
				if word[i] == '\\' && i+1 < len(word) && strings.IndexByte("\"\\$`", word[i+1]) >= 0 {
					i++
				}
				b.WriteByte(word[i])
			}
			if i >= len(word) {
				return "", errors.New("unterminated double quote")
			}
		case c == '\\':
			if i+1 >= len(word) {
				return "", errors.New("trailing backslash")
			}
			i++
			b.WriteByte(word[i])
		case c == ' ' || c == '\t' || c == '\n':
			return "", errors.New("more than one argument")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// confine maps a repository path from a client (leading slashes ignored)
// to a folder under root, refusing any path that leaves root, lexically or
// through symlinks. A missing "name" is also looked up as "name.git".
func confine(root, p string) (string, error) {
	rel := strings.TrimLeft(p, "/")
	if rel == "" {
		return "", errors.New("empty repository path")
	}
	if strings.ContainsRune(rel, 0) || strings.Contains(rel, "\\") {
		return "", fmt.Errorf("invalid repository path %q", p)
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." {
			return "", fmt.Errorf("repository path %q escapes the server root", p)
		}
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	if !within(root, full) {
		return "", fmt.Errorf("repository path %q escapes the server root", p)
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil && !strings.HasSuffix(full, ".git") {
		resolved, err = filepath.EvalSymlinks(full + ".git")
	}
	if err != nil {
		// Missing: let the caller report "not a git repository".
		return full, nil
	}
	if !within(root, resolved) {
		return "", fmt.Errorf("repository path %q escapes the server root", p)
	}
	return resolved, nil
}

// within reports whether path is strictly below root.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
