package gitserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// goGitSSHAuth returns go-git SSH auth for the private key that trusts only
// the server's known_hosts line.
func goGitSSHAuth(t *testing.T, s *Server, keyPEM []byte) *gitssh.PublicKeys {
	t.Helper()
	g := NewWithT(t)
	auth, err := gitssh.NewPublicKeys("git", keyPEM, "")
	g.Expect(err).NotTo(HaveOccurred())
	cb, err := gitssh.NewKnownHostsCallback(writeTemp(t, "known_hosts", s.KnownHosts()))
	g.Expect(err).NotTo(HaveOccurred())
	auth.HostKeyCallback = cb
	return auth
}

// sshClient connects to the server with x/crypto/ssh.
func sshClient(t *testing.T, s *Server, signer ssh.Signer) (*ssh.Client, error) {
	t.Helper()
	addr := strings.TrimPrefix(s.SSHURL(), "ssh://git@")
	return ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            "git",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey()),
		Timeout:         10 * time.Second,
	})
}

func TestSSHWithGoGit(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	r, sha := seed(t, s, "podinfo.git")
	base := s.MustStartSSH(t)
	g.Expect(base).To(MatchRegexp(`^ssh://git@127\.0\.0\.1:\d+$`))
	port := strings.TrimPrefix(base, "ssh://git@127.0.0.1:")
	g.Expect(string(s.KnownHosts())).To(HavePrefix("[127.0.0.1]:" + port + " ssh-ed25519 AAAA"))

	_, keyPEM := s.AuthorizedSSHKeyForTest(t)
	auth := goGitSSHAuth(t, s, keyPEM)
	repo, dir, err := goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: auth})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "main")).To(Equal(sha))

	// Push back over SSH (git-receive-pack).
	g.Expect(os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)).To(Succeed())
	wt, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = wt.Add("new.txt")
	g.Expect(err).NotTo(HaveOccurred())
	pushed, err := wt.Commit("from go-git", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Push(&git.PushOptions{Auth: auth})).To(Succeed())
	g.Expect(r.Head("main")).To(Equal(pushed.String()))

	// A host key that is not the server's is refused by the client.
	otherSrv := NewForTest(t)
	otherSrv.MustStartSSH(t)
	wrong, err := gitssh.NewPublicKeys("git", keyPEM, "")
	g.Expect(err).NotTo(HaveOccurred())
	cb, err := gitssh.NewKnownHostsCallback(writeTemp(t, "known_hosts",
		[]byte(knownhosts.Line([]string{strings.TrimPrefix(base, "ssh://git@")}, otherSrv.HostKey())+"\n")))
	g.Expect(err).NotTo(HaveOccurred())
	wrong.HostKeyCallback = cb
	_, _, err = goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: wrong})
	g.Expect(err).To(HaveOccurred())
}

func TestSSHWithSystemGit(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no ssh client installed, and CI must check the server against OpenSSH")
		}
		t.Skip("no ssh client installed; the SSH server is covered by the go-git tests")
	}
	g := NewWithT(t)
	s := NewForTest(t)
	r, sha := seed(t, s, "podinfo.git")
	base := s.MustStartSSH(t)
	_, keyPEM := s.AuthorizedSSHKeyForTest(t)
	keyFile := writeTemp(t, "id_ed25519", keyPEM)
	khFile := writeTemp(t, "known_hosts", s.KnownHosts())
	env := []string{fmt.Sprintf("GIT_SSH_COMMAND=%s -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes "+
		"-o UserKnownHostsFile=%s -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes", sshBin, keyFile, khFile)}

	dir, err := sysClone(t, s, base+"/podinfo.git", env)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sysRevParse(t, s, dir, "HEAD")).To(Equal(sha))

	g.Expect(os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)).To(Succeed())
	for _, args := range [][]string{{"add", "-A"}, {"commit", "--quiet", "-m", "over ssh"}, {"push", "--quiet", "origin", "main"}} {
		out, err := sysGit(s, dir, env, args...)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	g.Expect(r.Head("main")).To(Equal(sysRevParse(t, s, dir, "HEAD")))

	// Without the key's authorization the clone fails.
	s.RevokeSSHKey(mustParseKey(t, keyPEM).PublicKey())
	_, err = sysClone(t, s, base+"/podinfo.git", env)
	g.Expect(err).To(HaveOccurred())
}

func mustParseKey(t *testing.T, keyPEM []byte) ssh.Signer {
	t.Helper()
	signer, err := ssh.ParsePrivateKey(keyPEM)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return signer
}

func TestSSHRefusesUnauthorizedKeys(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	seed(t, s, "podinfo.git")
	base := s.MustStartSSH(t)
	signer, keyPEM, err := GenerateSSHKey()
	g.Expect(err).NotTo(HaveOccurred())

	// No key authorized: everyone is refused.
	_, _, err = goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: goGitSSHAuth(t, s, keyPEM)})
	g.Expect(err).To(HaveOccurred())
	_, err = sshClient(t, s, signer)
	g.Expect(err).To(HaveOccurred())

	// Another key authorized: still refused.
	s.AuthorizedSSHKeyForTest(t)
	_, _, err = goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: goGitSSHAuth(t, s, keyPEM)})
	g.Expect(err).To(HaveOccurred())

	s.AuthorizeSSHKey(signer.PublicKey())
	_, _, err = goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: goGitSSHAuth(t, s, keyPEM)})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestSSHRefusesPathEscapeAndOtherCommands(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	seed(t, s, "podinfo.git")
	s.MustStartSSH(t)
	signer, _ := s.AuthorizedSSHKeyForTest(t)

	// A bare repository outside the root, and a symlink to it inside.
	outside := filepath.Join(t.TempDir(), "secret.git")
	out, err := sysGit(s, t.TempDir(), nil, "init", "--bare", "--quiet", outside)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(os.Symlink(outside, filepath.Join(s.Root(), "link.git"))).To(Succeed())
	rel, err := filepath.Rel(s.Root(), outside)
	g.Expect(err).NotTo(HaveOccurred())

	client, err := sshClient(t, s, signer)
	g.Expect(err).NotTo(HaveOccurred())
	defer client.Close()
	run := func(cmd string) (string, error) {
		sess, err := client.NewSession()
		g.Expect(err).NotTo(HaveOccurred())
		defer sess.Close()
		sess.Stdin = strings.NewReader("0000")
		out, err := sess.CombinedOutput(cmd)
		return string(out), err
	}

	for _, cmd := range []string{
		"git-upload-pack '/../" + filepath.Base(filepath.Dir(outside)) + "/secret.git'",
		"git-upload-pack '" + rel + "'",
		"git-receive-pack '/" + rel + "'",
		"git-upload-pack '/podinfo.git/../../x.git'",
		"git-upload-pack '/link.git'",
		"git-upload-pack '/podinfo.git' extra",
		"git-upload-archive '/podinfo.git'",
		"ls /",
		"sh -c 'git-upload-pack /podinfo.git'",
	} {
		out, err := run(cmd)
		g.Expect(err).To(HaveOccurred(), "command %q must be refused", cmd)
		var exitErr *ssh.ExitError
		g.Expect(errors.As(err, &exitErr)).To(BeFalse(), "command %q must not run: %s", cmd, out)
	}

	// A missing repository runs nothing and reports git's usual error.
	out, err = run("git-upload-pack '/missing.git'")
	var exitErr *ssh.ExitError
	g.Expect(errors.As(err, &exitErr)).To(BeTrue(), "%v", err)
	g.Expect(exitErr.ExitStatus()).To(Equal(128))
	g.Expect(out).To(ContainSubstring("does not appear to be a git repository"))

	// A legitimate request still works on the same connection: the ref
	// advertisement comes back and the flush ends the session.
	out, err = run("git-upload-pack '/podinfo.git'")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("refs/heads/main"))
	out, err = run("git upload-pack 'podinfo'")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("refs/heads/main"))
}

func TestSSHSetDownAndRequests(t *testing.T) {
	g := NewWithT(t)
	s := NewForTest(t)
	_, sha := seed(t, s, "podinfo.git")
	base := s.MustStartSSH(t)
	_, keyPEM := s.AuthorizedSSHKeyForTest(t)
	auth := goGitSSHAuth(t, s, keyPEM)

	_, _, err := goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: auth})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Requests()).To(BeNumerically(">=", 1))

	s.SetDown(true)
	before := s.Requests()
	_, _, err = goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: auth})
	g.Expect(err).To(HaveOccurred())
	g.Expect(s.Requests()).To(BeNumerically(">", before))

	s.SetDown(false)
	repo, _, err := goGitClone(t, &git.CloneOptions{URL: base + "/podinfo.git", Auth: auth})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(goGitHead(t, repo, "main")).To(Equal(sha))
}

func TestParseGitCommand(t *testing.T) {
	for _, tc := range []struct {
		in, service, path string
		wantErr           bool
	}{
		{in: "git-upload-pack '/podinfo.git'", service: "git-upload-pack", path: "/podinfo.git"},
		{in: "git-receive-pack 'org/podinfo.git'", service: "git-receive-pack", path: "org/podinfo.git"},
		{in: "git upload-pack '/a.git'", service: "git-upload-pack", path: "/a.git"},
		{in: `git-upload-pack '/it'\''s.git'`, service: "git-upload-pack", path: "/it's.git"},
		{in: `git-upload-pack "/dq.git"`, service: "git-upload-pack", path: "/dq.git"},
		{in: "git-upload-pack /plain.git", service: "git-upload-pack", path: "/plain.git"},
		{in: "git-upload-pack", wantErr: true},
		{in: "git-upload-pack ''", wantErr: true},
		{in: "git-upload-pack 'a' 'b'", wantErr: true},
		{in: "git-upload-pack 'unterminated", wantErr: true},
		{in: "git-upload-archive '/a.git'", wantErr: true},
		{in: "rm -rf /", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			service, path, err := parseGitCommand(tc.in)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(service).To(Equal(tc.service))
			g.Expect(path).To(Equal(tc.path))
		})
	}
}

func TestConfine(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(root, "org", "a.git"), 0o755)).To(Succeed())

	p, err := confine(root, "/org/a.git")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(filepath.Join(root, "org", "a.git")))
	p, err = confine(root, "org/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(filepath.Join(root, "org", "a.git")))

	for _, bad := range []string{"", "/", "..", "/../x", "org/../../x", "org/a.git/../../..", `a\b`} {
		_, err := confine(root, bad)
		g.Expect(err).To(HaveOccurred(), "path %q", bad)
	}
}
