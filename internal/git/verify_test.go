package git

import (
	"context"
	"fmt"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// signedFixture is a repository with one differently signed commit per
// branch and signed tags.
type signedFixture struct {
	repo     *localRepo
	pgpFpr   string
	pgpPub   []byte
	otherPGP []byte
	ed, rsa  ssh.Signer
	ecdsa    ssh.Signer
	stranger ssh.Signer
}

func newSignedFixture(t *testing.T) *signedFixture {
	r := newLocalRepo(t, "main")
	base := r.commit("main", map[string]string{"README.md": "base"}, "unsigned base")
	pgpKey, pgpPub := newPGPKey(t, "Signer")
	_, otherPub := newPGPKey(t, "Other")
	f := &signedFixture{
		repo: r, pgpPub: pgpPub, otherPGP: otherPub,
		pgpFpr: fmt.Sprintf("%X", pgpKey.PrimaryKey.Fingerprint),
		ed:     newSSHKey(t, "ed25519"), rsa: newSSHKey(t, "rsa"), ecdsa: newSSHKey(t, "ecdsa"),
		stranger: newSSHKey(t, "ed25519"),
	}
	branches := []struct {
		name string
		opts gogit.CommitOptions
	}{
		{"pgp", gogit.CommitOptions{SignKey: pgpKey}},
		{"ssh-ed25519", gogit.CommitOptions{Signer: sshSigSigner{f.ed, "git", "sha512"}}},
		{"ssh-rsa", gogit.CommitOptions{Signer: sshSigSigner{f.rsa, "git", "sha512"}}},
		{"ssh-ecdsa-sha256", gogit.CommitOptions{Signer: sshSigSigner{f.ecdsa, "git", "sha256"}}},
		{"ssh-wrong-namespace", gogit.CommitOptions{Signer: sshSigSigner{f.ed, "file", "sha512"}}},
	}
	for _, b := range branches {
		r.git("checkout", "-q", "-b", b.name, base)
		goGitCommit(t, r, b.name+".txt", b.name, b.opts)
	}
	r.git("checkout", "-q", "main")
	repo, err := gogit.PlainOpen(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	tagOpts := &gogit.CreateTagOptions{Tagger: testSig(), Message: "pgp signed tag", SignKey: pgpKey}
	if _, err := repo.CreateTag("v1.0.0-pgp", plumbing.NewHash(base), tagOpts); err != nil {
		t.Fatal(err)
	}
	sshSignedTag(t, r, "v1.0.0-ssh", base, sshSigSigner{f.ed, "git", "sha512"})
	r.annotatedTag("v1.0.0-unsigned", base, "unsigned tag")
	return f
}

func TestCommit_Verify(t *testing.T) {
	f := newSignedFixture(t)
	edFpr := ssh.FingerprintSHA256(f.ed.PublicKey())
	allSSH := append(append(authorizedKey(f.stranger), "# comment\n\n"...), authorizedKey(f.ed)...)
	tests := []struct {
		name       string
		branch     string
		keys       map[string][]byte
		tamper     bool
		wantSigner string
		wantErr    string
	}{
		{name: "pgp", branch: "pgp", keys: map[string][]byte{"a.asc": f.otherPGP, "b.asc": f.pgpPub},
			wantSigner: f.pgpFpr},
		{name: "pgp unknown key", branch: "pgp", keys: map[string][]byte{"a.asc": f.otherPGP},
			wantErr: "not verified by any trusted key"},
		{name: "pgp without pgp keys", branch: "pgp", keys: map[string][]byte{"a.sshpub": authorizedKey(f.ed)},
			wantErr: "no trusted PGP keys"},
		{name: "pgp tampered", branch: "pgp", keys: map[string][]byte{"b.asc": f.pgpPub}, tamper: true,
			wantErr: "not verified"},
		{name: "pgp keyring that does not parse", branch: "pgp", keys: map[string][]byte{"b.asc": []byte("junk")},
			wantErr: "reading PGP keyring"},
		{name: "unsigned", branch: "main", keys: map[string][]byte{"b.asc": f.pgpPub}, wantErr: "not signed"},
		{name: "ssh ed25519, several keys in one entry", branch: "ssh-ed25519",
			keys: map[string][]byte{"keys.sshpub": allSSH}, wantSigner: edFpr},
		{name: "ssh rsa-sha2-512", branch: "ssh-rsa", keys: map[string][]byte{"rsa.sshpub": authorizedKey(f.rsa)},
			wantSigner: ssh.FingerprintSHA256(f.rsa.PublicKey())},
		{name: "ssh ecdsa with sha256", branch: "ssh-ecdsa-sha256",
			keys:       map[string][]byte{"ec.sshpub": authorizedKey(f.ecdsa)},
			wantSigner: ssh.FingerprintSHA256(f.ecdsa.PublicKey())},
		{name: "ssh untrusted key", branch: "ssh-ed25519",
			keys: map[string][]byte{"s.sshpub": authorizedKey(f.stranger)}, wantErr: "not a trusted key"},
		{name: "ssh without ssh keys", branch: "ssh-ed25519", keys: map[string][]byte{"b.asc": f.pgpPub},
			wantErr: "no trusted SSH keys"},
		{name: "ssh tampered", branch: "ssh-ed25519", keys: map[string][]byte{"e.sshpub": authorizedKey(f.ed)},
			tamper: true, wantErr: "does not match the payload"},
		{name: "ssh wrong namespace", branch: "ssh-wrong-namespace",
			keys: map[string][]byte{"e.sshpub": authorizedKey(f.ed)}, wantErr: `namespace is "file"`},
		{name: "ssh key entry that does not parse", branch: "ssh-ed25519",
			keys: map[string][]byte{"e.sshpub": []byte("ssh-ed25519 !!!")}, wantErr: "reading SSH keys"},
		{name: "other entries are ignored", branch: "ssh-ed25519",
			keys: map[string][]byte{"e.sshpub": authorizedKey(f.ed), "README": []byte("x")}, wantSigner: edFpr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, _ := newTestClient(t, nil, nil)
			commit, err := c.Clone(context.Background(), f.repo.url(), CheckoutOptions{Branch: tt.branch})
			g.Expect(err).NotTo(HaveOccurred())
			if tt.tamper {
				commit.Encoded = append(commit.Encoded, []byte("tampered\n")...)
			}
			signer, err := commit.Verify(tt.keys)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).To(ContainSubstring(commit.Hash))
				g.Expect(signer).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(signer).To(Equal(tt.wantSigner))
		})
	}
}

func TestTag_Verify(t *testing.T) {
	f := newSignedFixture(t)
	tests := []struct {
		name       string
		tag        string
		keys       map[string][]byte
		tamper     bool
		wantSigner string
		wantErr    string
	}{
		{name: "pgp", tag: "v1.0.0-pgp", keys: map[string][]byte{"k.asc": f.pgpPub}, wantSigner: f.pgpFpr},
		{name: "pgp unknown key", tag: "v1.0.0-pgp", keys: map[string][]byte{"k.asc": f.otherPGP},
			wantErr: "not verified"},
		{name: "pgp tampered", tag: "v1.0.0-pgp", keys: map[string][]byte{"k.asc": f.pgpPub}, tamper: true,
			wantErr: "not verified"},
		{name: "ssh", tag: "v1.0.0-ssh", keys: map[string][]byte{"k.sshpub": authorizedKey(f.ed)},
			wantSigner: ssh.FingerprintSHA256(f.ed.PublicKey())},
		{name: "ssh untrusted", tag: "v1.0.0-ssh", keys: map[string][]byte{"k.sshpub": authorizedKey(f.rsa)},
			wantErr: "not a trusted key"},
		{name: "ssh tampered", tag: "v1.0.0-ssh", keys: map[string][]byte{"k.sshpub": authorizedKey(f.ed)},
			tamper: true, wantErr: "does not match"},
		{name: "unsigned", tag: "v1.0.0-unsigned", keys: map[string][]byte{"k.asc": f.pgpPub},
			wantErr: "not signed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, _ := newTestClient(t, nil, nil)
			commit, err := c.Clone(context.Background(), f.repo.url(), CheckoutOptions{Tag: tt.tag})
			g.Expect(err).NotTo(HaveOccurred())
			tag := commit.ReferencingTag
			g.Expect(tag).NotTo(BeNil())
			g.Expect(tag.Message).NotTo(ContainSubstring("SIGNATURE"))
			if tt.tamper {
				tag.Encoded = append(tag.Encoded, []byte("tampered\n")...)
			}
			signer, err := tag.Verify(tt.keys)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).To(ContainSubstring(tt.tag))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(signer).To(Equal(tt.wantSigner))
		})
	}
}

func TestCommit_VerifyPartialCommit(t *testing.T) {
	g := NewWithT(t)
	c := &Commit{Hash: "0123456789abcdef0123456789abcdef01234567", Reference: "refs/heads/main",
		Signature: "-----BEGIN PGP SIGNATURE-----\n-----END PGP SIGNATURE-----"}
	_, err := c.Verify(map[string][]byte{"a.asc": []byte("x")})
	g.Expect(err).To(MatchError(ContainSubstring("partial commit")))
}
