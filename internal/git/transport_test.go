package git

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/windlass-dev/windlass/internal/gitserver"
)

// Credentials the transport tests use; the assertions look for them in error
// text.
const (
	testUser     = "flux-user"
	testPassword = "pa55-w0rd-value"
	testToken    = "bearer-token-value"
)

// served is a repository on a loopback git server.
type served struct {
	srv  *gitserver.Server
	repo *gitserver.Repo
	head string
}

// newServed starts a server with repo.git on main.
func newServed(t *testing.T) *served {
	s := gitserver.NewForTest(t)
	repo := s.MustInitRepo(t, "repo.git", "main")
	head := repo.MustCommit(t, "main", map[string]string{"deploy/app.yaml": "kind: ConfigMap"}, "init")
	return &served{srv: s, repo: repo, head: head}
}

// authFor builds AuthOptions for rawURL from Secret data, failing the test
// on error.
func authFor(t *testing.T, rawURL string, data map[string][]byte) *AuthOptions {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := NewAuthOptions(*u, data)
	if err != nil {
		t.Fatalf("NewAuthOptions: %v", err)
	}
	return auth
}

// transportCase is one clone over a real transport.
type transportCase struct {
	name string
	// setup configures the server and returns the clone URL and the Secret
	// data.
	setup    func(t *testing.T, s *served) (string, map[string][]byte)
	wantAuth bool   // the clone fails with IsAuthError
	wantErr  string // the clone fails with this in the message
}

func TestClone_Transports(t *testing.T) {
	tests := []transportCase{
		{name: "http anonymous", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			return s.srv.MustStartHTTP(t) + "/repo.git", nil
		}},
		{name: "http basic auth", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			s.srv.SetBasicAuth(testUser, testPassword)
			return s.srv.MustStartHTTP(t) + "/repo.git", basicAuthData(testPassword)
		}},
		{name: "http basic auth, wrong password", wantAuth: true,
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				s.srv.SetBasicAuth(testUser, "the-right-one")
				return s.srv.MustStartHTTP(t) + "/repo.git", basicAuthData(testPassword)
			}},
		{name: "http, no credentials for a protected repo", wantAuth: true,
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				s.srv.SetBasicAuth(testUser, testPassword)
				return s.srv.MustStartHTTP(t) + "/repo.git", nil
			}},
		{name: "http bearer token", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			s.srv.SetBearerToken(testToken)
			return s.srv.MustStartHTTP(t) + "/repo.git", map[string][]byte{"bearerToken": []byte(testToken)}
		}},
		{name: "http wrong bearer token", wantAuth: true,
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				s.srv.SetBearerToken("the-right-token")
				return s.srv.MustStartHTTP(t) + "/repo.git", map[string][]byte{"bearerToken": []byte(testToken)}
			}},
		{name: "https with CA", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			u := s.srv.MustStartHTTPS(t, gitserver.TLSOptions{})
			return u + "/repo.git", map[string][]byte{"ca.crt": s.srv.CACert()}
		}},
		{name: "https with CA and basic auth", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			s.srv.SetBasicAuth(testUser, testPassword)
			u := s.srv.MustStartHTTPS(t, gitserver.TLSOptions{})
			data := basicAuthData(testPassword)
			data["caFile"] = s.srv.CACert()
			return u + "/repo.git", data
		}},
		{name: "https without CA", wantAuth: true, wantErr: "certificate",
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				return s.srv.MustStartHTTPS(t, gitserver.TLSOptions{}) + "/repo.git", nil
			}},
		{name: "https mTLS", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			u := s.srv.MustStartHTTPS(t, gitserver.TLSOptions{RequireClientCert: true})
			cert, key := s.srv.ClientCert()
			return u + "/repo.git", map[string][]byte{"ca.crt": s.srv.CACert(), "tls.crt": cert, "tls.key": key}
		}},
		{name: "https mTLS without client certificate", wantAuth: true,
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				u := s.srv.MustStartHTTPS(t, gitserver.TLSOptions{RequireClientCert: true})
				return u + "/repo.git", map[string][]byte{"ca.crt": s.srv.CACert()}
			}},
		{name: "ssh", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			u := s.srv.MustStartSSH(t)
			_, identity := s.srv.AuthorizedSSHKeyForTest(t)
			return u + "/repo.git", sshData(identity, s.srv.KnownHosts())
		}},
		{name: "ssh with an encrypted identity", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			u := s.srv.MustStartSSH(t)
			identity := encryptedIdentity(t, s.srv, testPassword)
			data := sshData(identity, s.srv.KnownHosts())
			data["password"] = []byte(testPassword)
			return u + "/repo.git", data
		}},
		{name: "ssh unknown host", wantAuth: true, wantErr: "not in known_hosts",
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				u := s.srv.MustStartSSH(t)
				_, identity := s.srv.AuthorizedSSHKeyForTest(t)
				other := "other.example.com " + string(authorizedKey(newSSHKey(t, "ed25519")))
				return u + "/repo.git", sshData(identity, []byte(other))
			}},
		{name: "ssh host key mismatch", wantAuth: true, wantErr: "does not match known_hosts",
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				u := s.srv.MustStartSSH(t)
				_, identity := s.srv.AuthorizedSSHKeyForTest(t)
				host := strings.Fields(string(s.srv.KnownHosts()))[0]
				wrong := host + " " + string(authorizedKey(newSSHKey(t, "ed25519")))
				return u + "/repo.git", sshData(identity, []byte(wrong))
			}},
		{name: "ssh key not authorized", wantAuth: true,
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				u := s.srv.MustStartSSH(t)
				_, identity, err := gitserver.GenerateSSHKey()
				if err != nil {
					t.Fatal(err)
				}
				return u + "/repo.git", sshData(identity, s.srv.KnownHosts())
			}},
		{name: "http host down", wantErr: "503",
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				s.srv.SetBasicAuth(testUser, testPassword)
				s.srv.SetDown(true)
				return s.srv.MustStartHTTP(t) + "/repo.git", basicAuthData(testPassword)
			}},
		{name: "ssh host down", wantErr: "ssh",
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				u := s.srv.MustStartSSH(t)
				_, identity := s.srv.AuthorizedSSHKeyForTest(t)
				s.srv.SetDown(true)
				return u + "/repo.git", sshData(identity, s.srv.KnownHosts())
			}},
		{name: "missing repository", wantErr: "/nope.git': repository not found",
			setup: func(t *testing.T, s *served) (string, map[string][]byte) {
				return s.srv.MustStartHTTP(t) + "/nope.git", nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTransportCase(t, tt)
		})
	}
}

// runTransportCase clones with and without LastObservedCommit and checks
// the outcome.
func runTransportCase(t *testing.T, tt transportCase) {
	g := NewWithT(t)
	s := newServed(t)
	rawURL, data := tt.setup(t, s)
	c, dir := newTestClient(t, authFor(t, rawURL, data), nil)
	commit, err := c.Clone(context.Background(), rawURL, CheckoutOptions{Branch: "main", ShallowClone: true})
	if tt.wantAuth || tt.wantErr != "" {
		g.Expect(err).To(HaveOccurred())
		t.Logf("clone error: %v", err)
		g.Expect(IsAuthError(err)).To(Equal(tt.wantAuth), "IsAuthError(%v)", err)
		g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
		g.Expect(err.Error()).NotTo(MatchRegexp(`:\s*$`), "no dangling reason")
		expectNoSecrets(g, err)
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.String()).To(Equal("main@sha1:" + s.head))
	g.Expect(listFiles(t, dir)).To(Equal([]string{"deploy/app.yaml"}))
}

func TestClone_UnchangedRemoteMakesOneRequest(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *served) (string, map[string][]byte)
	}{
		{name: "http", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			s.srv.SetBasicAuth(testUser, testPassword)
			return s.srv.MustStartHTTP(t) + "/repo.git", basicAuthData(testPassword)
		}},
		{name: "ssh", setup: func(t *testing.T, s *served) (string, map[string][]byte) {
			u := s.srv.MustStartSSH(t)
			_, identity := s.srv.AuthorizedSSHKeyForTest(t)
			return u + "/repo.git", sshData(identity, s.srv.KnownHosts())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newServed(t)
			if err := s.repo.AnnotatedTag("v1.0.0", s.head, "release"); err != nil {
				t.Fatal(err)
			}
			rawURL, data := tt.setup(t, s)
			auth := authFor(t, rawURL, data)
			for _, opts := range []CheckoutOptions{
				{Branch: "main", LastObservedCommit: "main@sha1:" + s.head},
				{Tag: "v1.0.0", LastObservedCommit: "v1.0.0@sha1:" + s.head},
				{SemVer: "^1", LastObservedCommit: "v1.0.0@sha1:" + s.head},
			} {
				c, dir := newTestClient(t, auth, nil)
				before := s.srv.Requests()
				commit, err := c.Clone(context.Background(), rawURL, opts)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(s.srv.Requests()-before).To(Equal(int64(1)), "requests for %+v", opts)
				g.Expect(IsConcreteCommit(*commit)).To(BeFalse())
				g.Expect(commit.String()).To(Equal(opts.LastObservedCommit))
				g.Expect(filepath.Join(dir, ".git")).NotTo(BeADirectory())
			}

			// Once the branch moves, the same options clone the new commit.
			next := s.repo.MustCommit(t, "main", map[string]string{"b.txt": "b"}, "next")
			c, _ := newTestClient(t, auth, nil)
			before := s.srv.Requests()
			commit, err := c.Clone(context.Background(), rawURL, CheckoutOptions{Branch: "main",
				LastObservedCommit: "main@sha1:" + s.head})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(IsConcreteCommit(*commit)).To(BeTrue())
			g.Expect(commit.Hash).To(Equal(next))
			g.Expect(s.srv.Requests() - before).To(BeNumerically(">", 1))
		})
	}
}

func TestClone_ErrorsNeverContainCredentials(t *testing.T) {
	s := newServed(t)
	base := s.srv.MustStartHTTP(t)
	s.srv.SetDown(true)
	host := strings.TrimPrefix(base, "http://")
	tests := []struct {
		name string
		url  string
		auth map[string][]byte
	}{
		{name: "userinfo and query in the URL", url: "http://" + testUser + ":" + testPassword + "@" + host +
			"/repo.git?token=" + testToken},
		{name: "basic auth", url: base + "/repo.git", auth: basicAuthData(testPassword)},
		{name: "bearer token", url: base + "/repo.git", auth: map[string][]byte{"bearerToken": []byte(testToken)}},
		{name: "unreachable port", url: "http://" + testUser + ":" + testPassword + "@127.0.0.1:1/repo.git?x=" +
			testToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var auth *AuthOptions
			if tt.auth != nil {
				auth = authFor(t, tt.url, tt.auth)
			}
			for _, opts := range []CheckoutOptions{{Branch: "main"}, {Branch: "main", LastObservedCommit: "x"},
				{SemVer: "*"}} {
				c, _ := newTestClient(t, auth, nil)
				_, err := c.Clone(context.Background(), tt.url, opts)
				g.Expect(err).To(HaveOccurred())
				expectNoSecrets(g, err)
			}
		})
	}
}

func TestClone_SubmodulesOverTransports(t *testing.T) {
	tests := []struct {
		name      string
		transport string // http, https or ssh
		subURL    func(s *served, base string) string
		noHTTP    bool
		wantErr   string
	}{
		{name: "https, relative URL: credentials and CA are reused", transport: "https",
			subURL: func(*served, string) string { return "../sub.git" }},
		{name: "http, absolute URL on the same host", transport: "http",
			subURL: func(_ *served, base string) string { return base + "/sub.git" }},
		{name: "ssh, relative URL: identity and known_hosts are reused", transport: "ssh",
			subURL: func(*served, string) string { return "../sub.git" }},
		{name: "local path is refused for a remote parent", transport: "http", wantErr: "not allowed",
			subURL: func(s *served, _ string) string { return "file://" + filepath.Join(s.srv.Root(), "sub.git") }},
		{name: "http submodule refused when plain HTTP is", transport: "http", noHTTP: true,
			wantErr: "uses plain HTTP, which the controller refuses",
			subURL:  func(_ *served, base string) string { return base + "/sub.git" }},
		{name: "ssh submodule on a host without credentials", transport: "https",
			wantErr: "no SSH credentials for host other.example.com",
			subURL:  func(*served, string) string { return "ssh://git@other.example.com/sub.git" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newServed(t)
			base, data := startTransport(t, s, tt.transport)
			sub := s.srv.MustInitRepo(t, "sub.git", "main")
			sub.MustCommit(t, "main", map[string]string{"lib.txt": "lib"}, "lib")
			pushParentWithSubmodule(t, s, "parent.git", tt.subURL(s, base), sub)

			rawURL := base + "/parent.git"
			c, dir := newTestClient(t, authFor(t, rawURL, data), nil)
			_, err := c.Clone(context.Background(), rawURL, CheckoutOptions{Branch: "main", RecurseSubmodules: true, RefusePlainHTTP: tt.noHTTP})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(listFiles(t, dir)).To(Equal([]string{".gitmodules", "app.txt", "libs/sub/lib.txt"}))
		})
	}
}

// startTransport starts one protected transport on s and returns its base
// URL with the Secret data that opens it.
func startTransport(t *testing.T, s *served, transport string) (string, map[string][]byte) {
	t.Helper()
	switch transport {
	case "ssh":
		_, identity := s.srv.AuthorizedSSHKeyForTest(t)
		base := s.srv.MustStartSSH(t)
		return base, sshData(identity, s.srv.KnownHosts())
	case "https":
		s.srv.SetBasicAuth(testUser, testPassword)
		data := basicAuthData(testPassword)
		data["ca.crt"] = s.srv.CACert()
		return s.srv.MustStartHTTPS(t, gitserver.TLSOptions{}), data
	}
	s.srv.SetBasicAuth(testUser, testPassword)
	return s.srv.MustStartHTTP(t), basicAuthData(testPassword)
}

func TestClone_RefusesBeforeAnyRequest(t *testing.T) {
	s := newServed(t)
	base := s.srv.MustStartHTTP(t)
	sshBase := s.srv.MustStartSSH(t)
	closed, _ := newTestClient(t, nil, nil)
	closed.Close()
	tests := []struct {
		name    string
		client  func(t *testing.T) *Client
		url     string
		wantErr string
	}{
		{name: "credentials for another host", url: "http://localhost:1/repo.git", wantErr: "credentials are for",
			client: func(t *testing.T) *Client {
				c, _ := newTestClient(t, authFor(t, base+"/repo.git", basicAuthData(testPassword)), nil)
				return c
			}},
		{name: "ssh without credentials", url: sshBase + "/repo.git", wantErr: "ssh requires",
			client: func(t *testing.T) *Client {
				c, _ := newTestClient(t, nil, nil)
				return c
			}},
		{name: "closed client", url: base + "/repo.git", wantErr: "closed",
			client: func(*testing.T) *Client { return closed }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := s.srv.Requests()
			_, err := tt.client(t).Clone(context.Background(), tt.url, CheckoutOptions{Branch: "main"})
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(s.srv.Requests()).To(Equal(before))
		})
	}
}

// pushParentWithSubmodule creates parent.git on the server: one commit with
// app.txt and a submodule at libs/sub pointing at subURL and pinned to the
// head of sub. It is written locally with git and pushed to the bare
// repository's path.
func pushParentWithSubmodule(t *testing.T, s *served, name, subURL string, sub *gitserver.Repo) {
	t.Helper()
	subHead, err := sub.Head("main")
	if err != nil {
		t.Fatal(err)
	}
	parent := s.srv.MustInitRepo(t, name, "main")
	local := newLocalRepo(t, "main")
	local.commit("main", map[string]string{
		"app.txt":     "app",
		".gitmodules": "[submodule \"sub\"]\n\tpath = libs/sub\n\turl = " + subURL + "\n",
	}, "parent")
	local.git("update-index", "--add", "--cacheinfo", "160000,"+subHead+",libs/sub")
	local.git("commit", "-q", "-m", "add submodule")
	local.git("push", "-q", parent.Path(), "main")
}

// basicAuthData is Secret data with testUser and password.
func basicAuthData(password string) map[string][]byte {
	return map[string][]byte{"username": []byte(testUser), "password": []byte(password)}
}

// sshData is Secret data for SSH.
func sshData(identity, knownHosts []byte) map[string][]byte {
	return map[string][]byte{"identity": identity, "known_hosts": knownHosts}
}

// encryptedIdentity authorizes a new key on srv and returns it encrypted
// with passphrase.
func encryptedIdentity(t *testing.T, srv *gitserver.Server, passphrase string) []byte {
	t.Helper()
	identity := sshIdentityPEM(t, passphrase)
	signer, err := ssh.ParsePrivateKeyWithPassphrase(identity, []byte(passphrase))
	if err != nil {
		t.Fatal(err)
	}
	srv.AuthorizeSSHKey(signer.PublicKey())
	return identity
}

// expectNoSecrets asserts that err mentions none of the test credentials.
func expectNoSecrets(g *WithT, err error) {
	for _, secret := range []string{testPassword, testToken, testUser + ":"} {
		g.Expect(err.Error()).NotTo(ContainSubstring(secret))
	}
}

func TestClone_ConcurrentClientsKeepTheirOwnSettings(t *testing.T) {
	g := NewWithT(t)
	a, b := newServed(t), newServed(t)
	a.srv.SetBasicAuth(testUser, testPassword)
	urlA := a.srv.MustStartHTTPS(t, gitserver.TLSOptions{}) + "/repo.git"
	urlB := b.srv.MustStartHTTPS(t, gitserver.TLSOptions{RequireClientCert: true}) + "/repo.git"
	dataA := basicAuthData(testPassword)
	dataA["ca.crt"] = a.srv.CACert()
	cert, key := b.srv.ClientCert()
	dataB := map[string][]byte{"ca.crt": b.srv.CACert(), "tls.crt": cert, "tls.key": key}
	clones := []struct {
		url, head string
		data      map[string][]byte
		wantOK    bool
	}{
		{url: urlA, head: a.head, data: dataA, wantOK: true},
		{url: urlB, head: b.head, data: dataB, wantOK: true},
		{url: urlA, data: nil, wantOK: false},                                         // no CA
		{url: urlB, data: map[string][]byte{"ca.crt": b.srv.CACert()}, wantOK: false}, // no client cert
		{url: urlB, data: map[string][]byte{"ca.crt": a.srv.CACert()}, wantOK: false}, // A's CA for B
	}
	type result struct {
		i   int
		c   *Commit
		err error
	}
	results := make(chan result)
	const rounds = 4
	for round := 0; round < rounds; round++ {
		for i, cl := range clones {
			c, _ := newTestClient(t, authFor(t, cl.url, cl.data), nil)
			go func() {
				commit, err := c.Clone(context.Background(), cl.url, CheckoutOptions{Branch: "main", ShallowClone: true})
				results <- result{i, commit, err}
			}()
		}
	}
	for range rounds * len(clones) {
		r := <-results
		if clones[r.i].wantOK {
			g.Expect(r.err).NotTo(HaveOccurred())
			g.Expect(r.c.Hash).To(Equal(clones[r.i].head))
		} else {
			g.Expect(r.err).To(HaveOccurred(), "clone %d should fail", r.i)
			g.Expect(IsAuthError(r.err)).To(BeTrue(), "clone %d: %v", r.i, r.err)
		}
	}
}
