package git

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// needSSHKeygen skips a test that checks compatibility with OpenSSH when
// ssh-keygen is not installed, except in CI (where $CI is set), whose
// runner installs it: there the test fails instead. The same code paths are
// covered without it by the tests that sign in Go (TestCommit_Verify,
// TestTag_Verify).
func needSSHKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is not installed, and CI must check OpenSSH interoperability")
		}
		t.Skip("ssh-keygen is not installed: OpenSSH interoperability is not checked " +
			"(install openssh-client); Go-signed SSHSIG tests still run")
	}
	return p
}

// keygenKey creates a key pair with ssh-keygen and returns the private key
// path and the public key line.
func keygenKey(t *testing.T, kind string) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "id_"+kind)
	run(t, "", nil, "ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "test@example.com", "-f", path)
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return path, pub
}

// run runs a command and returns its standard output.
func run(t *testing.T, dir string, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out.Bytes()
}

func TestVerifySSHSignature_SignedBySSHKeygen(t *testing.T) {
	needSSHKeygen(t)
	payload := []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@example.com> 0 +0000\n\nmsg\n")
	tests := []struct {
		name      string
		kind      string
		namespace string
		tamper    bool
		wantErr   string
	}{
		{name: "ed25519", kind: "ed25519", namespace: "git"},
		{name: "rsa", kind: "rsa", namespace: "git"},
		{name: "ecdsa", kind: "ecdsa", namespace: "git"},
		{name: "other namespace", kind: "ed25519", namespace: "file", wantErr: "namespace"},
		{name: "tampered", kind: "ed25519", namespace: "git", tamper: true, wantErr: "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			key, pub := keygenKey(t, tt.kind)
			sig := run(t, "", payload, "ssh-keygen", "-q", "-Y", "sign", "-n", tt.namespace, "-f", key)
			trusted, err := parseAuthorizedKeys(pub)
			g.Expect(err).NotTo(HaveOccurred())
			msg := payload
			if tt.tamper {
				msg = append([]byte("x"), payload...)
			}
			signer, err := verifySSHSignature(msg, sig, trusted)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(signer).To(Equal(ssh.FingerprintSHA256(trusted[0])))
		})
	}
}

func TestSSHSigSigner_AcceptedBySSHKeygen(t *testing.T) {
	needSSHKeygen(t)
	for _, kind := range []string{"ed25519", "rsa", "ecdsa"} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			signer := newSSHKey(t, kind)
			payload := []byte("payload signed in Go\n")
			sig, err := sshSigSigner{signer, "git", "sha512"}.sign(payload)
			g.Expect(err).NotTo(HaveOccurred())
			sigFile := filepath.Join(t.TempDir(), "payload.sig")
			g.Expect(os.WriteFile(sigFile, sig, 0o600)).To(Succeed())
			run(t, "", payload, "ssh-keygen", "-q", "-Y", "check-novalidate", "-n", "git", "-s", sigFile)
		})
	}
}

func TestClone_VerifyCommitAndTagSignedByGit(t *testing.T) {
	needSSHKeygen(t)
	g := NewWithT(t)
	key, pub := keygenKey(t, "ed25519")
	r := newLocalRepo(t, "main")
	r.commit("main", map[string]string{"a.txt": "a"}, "base")
	signing := []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + key}
	r.git(append(signing, "commit", "-q", "-S", "--allow-empty", "-m", "signed by git")...)
	r.git(append(signing, "tag", "-s", "-m", "signed tag", "v1.0.0")...)

	trusted := map[string][]byte{"git.sshpub": pub}
	wantSigner := ssh.FingerprintSHA256(mustParseAuthorizedKey(t, pub))
	c, _ := newTestClient(t, nil, nil)
	commit, err := c.Clone(context.Background(), r.url(), CheckoutOptions{Tag: "v1.0.0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.Signature).To(HavePrefix("-----BEGIN SSH SIGNATURE-----"))
	signer, err := commit.Verify(trusted)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(signer).To(Equal(wantSigner))
	g.Expect(commit.ReferencingTag).NotTo(BeNil())
	signer, err = commit.ReferencingTag.Verify(trusted)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(signer).To(Equal(wantSigner))
}

func TestParseSSHSignature(t *testing.T) {
	wrap := func(raw []byte) []byte { return armorSSHSig(raw) }
	good, err := sshSigSigner{newSSHKey(t, "ed25519"), "git", "sha512"}.sign([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(
		strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(good)), sshSignatureHeader), sshSigFooter)), ""))
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{name: "valid", in: good},
		{name: "no header", in: []byte("hello"), wantErr: "armor header"},
		{name: "no footer", in: []byte(sshSignatureHeader + "\nAAAA\n"), wantErr: "armor footer"},
		{name: "bad base64", in: []byte(sshSignatureHeader + "\n!!!\n" + sshSigFooter), wantErr: "base64"},
		{name: "no preamble", in: wrap([]byte("NOTSIG....")), wantErr: "preamble"},
		{name: "truncated", in: wrap(raw[:20]), wantErr: "malformed"},
		{name: "trailing data", in: wrap(append(append([]byte{}, raw...), 0)), wantErr: "malformed"},
		{name: "version 2", in: wrap(append(append([]byte("SSHSIG"), 0, 0, 0, 2), raw[10:]...)),
			wantErr: "version 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseSSHSignature(tt.in)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestVerifySSHSignature_Rejections(t *testing.T) {
	ed := newSSHKey(t, "ed25519")
	rsaKey := newSSHKey(t, "rsa")
	payload := []byte("payload\n")
	sign := func(s sshSigSigner) []byte {
		sig, err := s.sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	sha1RSA := func() []byte {
		// An RSA signature with the SHA-1 "ssh-rsa" algorithm, which SSHSIG forbids.
		s := sshSigSigner{rsaKey, "git", "sha512"}
		sig, err := s.signWithAlgorithm(payload, ssh.KeyAlgoRSA)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	tests := []struct {
		name    string
		sig     []byte
		trusted []ssh.PublicKey
		wantErr string
	}{
		{name: "unsupported hash", sig: sign(sshSigSigner{ed, "git", "md5"}), trusted: []ssh.PublicKey{ed.PublicKey()},
			wantErr: "unsupported hash algorithm"},
		{name: "sha1 rsa", sig: sha1RSA(), trusted: []ssh.PublicKey{rsaKey.PublicKey()}, wantErr: "SHA-1"},
		{name: "no trusted keys match", sig: sign(sshSigSigner{ed, "git", "sha256"}),
			trusted: []ssh.PublicKey{rsaKey.PublicKey()}, wantErr: "not a trusted key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := verifySSHSignature(payload, tt.sig, tt.trusted)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// mustParseAuthorizedKey parses one authorized_keys line.
func mustParseAuthorizedKey(t *testing.T, b []byte) ssh.PublicKey {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
