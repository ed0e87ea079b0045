package git

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/ProtonMail/go-crypto/openpgp/s2k"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// signingPassphrase protects the signing keys of the tests; the assertions
// look for it in error text.
const signingPassphrase = "signing-pa55phrase"

// needGPG skips a test that checks compatibility with GnuPG when gpg is not
// installed, except in CI (where $CI is set): there the test fails.
func needGPG(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gpg is not installed, and CI must check GnuPG interoperability")
		}
		t.Skip("gpg is not installed: GnuPG interoperability is not checked (install gnupg)")
	}
}

// fastPGPConfig makes keys quick to generate and to decrypt: EdDSA, and
// the fewest S2K iterations.
var fastPGPConfig = &packet.Config{
	Algorithm: packet.PubKeyAlgoEdDSA,
	S2KConfig: &s2k.Config{S2KMode: s2k.IteratedSaltedS2K, S2KCount: 65536},
}

// newSigningKey generates an OpenPGP key pair (EdDSA) and returns its
// armored private key, encrypted with passphrase when it is set, its
// armored public key and its fingerprint, as Commit.Verify writes it.
func newSigningKey(t *testing.T, name, passphrase string) (private, public []byte, fingerprint string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", "automation@example.com", fastPGPConfig)
	if err != nil {
		t.Fatal(err)
	}
	public = armoredKey(t, openpgp.PublicKeyType, e.Serialize)
	if passphrase != "" {
		if err := e.EncryptPrivateKeys([]byte(passphrase), fastPGPConfig); err != nil {
			t.Fatal(err)
		}
	}
	private = armoredKey(t, openpgp.PrivateKeyType, func(w io.Writer) error {
		return e.SerializePrivateWithoutSigning(w, nil)
	})
	return private, public, fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)
}

// armoredKey armors what serialize writes as a block of type blockType.
func armoredKey(t *testing.T, blockType string, serialize func(io.Writer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, blockType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gnupgHome returns a GnuPG home holding the public key pub. It is made
// under the system's temporary folder, whose short path keeps gpg's socket
// paths within their length limit.
func gnupgHome(t *testing.T, pub []byte) string {
	t.Helper()
	home, err := os.MkdirTemp("", "gnupg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		_ = os.RemoveAll(home)
	})
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("gpg", "--batch", "--homedir", home, "--import")
	cmd.Stdin = bytes.NewReader(pub)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	return home
}

// pushSigned commits a change signed by signer and pushes it to main.
func pushSigned(t *testing.T, p *pushRemote, signer Signer) string {
	t.Helper()
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	editFiles(t, w.Dir(), map[string]string{"deploy/app.yaml": "kind: Deployment"})
	hash, err := w.Commit(CommitOptions{Message: "signed update", Author: automationAuthor, Signer: signer})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := w.Push(context.Background(), PushOptions{}); err != nil {
		t.Fatalf("Push: %v", err)
	}
	return hash
}

// verifyWithClone clones main and verifies its signature with keys.
func verifyWithClone(t *testing.T, p *pushRemote, keys map[string][]byte) string {
	t.Helper()
	c, _ := newTestClient(t, p.auth, nil)
	commit, err := c.Clone(context.Background(), p.url, CheckoutOptions{Branch: "main"})
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	signer, err := commit.Verify(keys)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return signer
}

func TestWorkspace_OpenPGPSignedCommit(t *testing.T) {
	needGPG(t)
	for _, passphrase := range []string{"", signingPassphrase} {
		name := "plain key"
		if passphrase != "" {
			name = "encrypted key"
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			private, pub, fingerprint := newSigningKey(t, "Automation", passphrase)
			signer, err := NewOpenPGPSigner(private, []byte(passphrase))
			g.Expect(err).NotTo(HaveOccurred())
			p := newPushRemote(t, "http")
			hash := pushSigned(t, p, signer)

			g.Expect(p.git(t, nil, "cat-file", "commit", hash)).To(ContainSubstring("gpgsig -----BEGIN PGP SIGNATURE-----"))
			out := p.git(t, []string{"GNUPGHOME=" + gnupgHome(t, pub)}, "verify-commit", hash)
			g.Expect(out).To(ContainSubstring(`Good signature from "Automation <automation@example.com>"`))
			g.Expect(verifyWithClone(t, p, map[string][]byte{"automation.asc": pub})).To(Equal(fingerprint))
		})
	}
}

func TestWorkspace_SSHSignedCommit(t *testing.T) {
	needSSHKeygen(t)
	tests := []struct {
		kind, password string
	}{
		{kind: "ed25519"},
		{kind: "ed25519", password: signingPassphrase},
		{kind: "rsa"},
		{kind: "ecdsa"},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/password="+tt.password, func(t *testing.T) {
			g := NewWithT(t)
			keyFile := filepath.Join(t.TempDir(), "id")
			// One round of the key derivation keeps the decryption quick.
			run(t, "", nil, "ssh-keygen", "-q", "-t", tt.kind, "-a", "1", "-N", tt.password, "-C", "automation",
				"-f", keyFile)
			identity, err := os.ReadFile(keyFile)
			g.Expect(err).NotTo(HaveOccurred())
			pub, err := os.ReadFile(keyFile + ".pub")
			g.Expect(err).NotTo(HaveOccurred())
			signer, err := NewSSHSigner(identity, []byte(tt.password))
			g.Expect(err).NotTo(HaveOccurred())
			p := newPushRemote(t, "http")
			hash := pushSigned(t, p, signer)

			allowed := filepath.Join(t.TempDir(), "allowed_signers")
			g.Expect(os.WriteFile(allowed, append([]byte("automation@example.com "), pub...), 0o600)).To(Succeed())
			out := p.git(t, nil, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed,
				"verify-commit", hash)
			g.Expect(out).To(ContainSubstring(`Good "git" signature for automation@example.com`))
			g.Expect(verifyWithClone(t, p, map[string][]byte{"automation.sshpub": pub})).To(Equal(
				ssh.FingerprintSHA256(mustParseAuthorizedKey(t, pub))))
		})
	}
}

func TestNewSigner_Errors(t *testing.T) {
	encryptedPGP := func(t *testing.T) []byte {
		private, _, _ := newSigningKey(t, "Automation", signingPassphrase)
		return private
	}
	publicPGP := func(t *testing.T) []byte {
		_, public, _ := newSigningKey(t, "Automation", "")
		return public
	}
	encryptedSSH := sshIdentityPEM(t, signingPassphrase)
	pgp := func(key func(*testing.T) []byte, passphrase string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := NewOpenPGPSigner(key(t), []byte(passphrase))
			return err
		}
	}
	sshKey := func(identity []byte, password string) func(*testing.T) error {
		return func(*testing.T) error {
			_, err := NewSSHSigner(identity, []byte(password))
			return err
		}
	}
	text := func(s string) func(*testing.T) []byte { return func(*testing.T) []byte { return []byte(s) } }
	tests := []struct {
		name    string
		newErr  func(t *testing.T) error
		wantErr string
	}{
		{name: "pgp: not a key", newErr: pgp(text("hello"), ""), wantErr: "not an armored"},
		{name: "pgp: public key only", newErr: pgp(publicPGP, ""), wantErr: "no private key"},
		{name: "pgp: encrypted, no passphrase", newErr: pgp(encryptedPGP, ""), wantErr: "encrypted and no passphrase"},
		{name: "pgp: encrypted, wrong passphrase", newErr: pgp(encryptedPGP, "wrong-"+signingPassphrase),
			wantErr: "does not decrypt"},
		{name: "ssh: not a key", newErr: sshKey([]byte("hello"), ""), wantErr: "not an SSH private key"},
		{name: "ssh: public key", newErr: sshKey(authorizedKey(newSSHKey(t, "ed25519")), ""),
			wantErr: "not an SSH private key"},
		{name: "ssh: encrypted, no password", newErr: sshKey(encryptedSSH, ""), wantErr: "encrypted and no password"},
		{name: "ssh: encrypted, wrong password", newErr: sshKey(encryptedSSH, "wrong-"+signingPassphrase),
			wantErr: "does not decrypt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.newErr(t)
			var invalid *InvalidSigningKeyError
			g.Expect(err).To(BeAssignableToTypeOf(invalid))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
			g.Expect(err.Error()).NotTo(ContainSubstring(signingPassphrase))
		})
	}
}
