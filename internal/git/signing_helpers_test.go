package git

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/crypto/ssh"
)

// newPGPKey generates a PGP key pair and returns it with its armored public
// keyring.
func newPGPKey(t testing.TB, name string) (*openpgp.Entity, []byte) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", strings.ToLower(name)+"@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, buf.Bytes()
}

// newSSHKey generates an SSH signer of the given type: ed25519, rsa or
// ecdsa.
func newSSHKey(t testing.TB, kind string) ssh.Signer {
	t.Helper()
	var key any
	var err error
	switch kind {
	case "ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case "rsa":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ecdsa":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("unknown key type %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

// authorizedKey returns the authorized_keys line of a signer's public key.
func authorizedKey(s ssh.Signer) []byte {
	return ssh.MarshalAuthorizedKey(s.PublicKey())
}

// testSig is the fixed identity of commits and tags made with go-git.
func testSig() *object.Signature {
	return &object.Signature{Name: "Test Author", Email: "author@example.com",
		When: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// goGitCommit commits a file on the checked-out branch of r with go-git,
// signed as opts says, and returns the commit hash.
func goGitCommit(t testing.TB, r *localRepo, file, content string, opts gogit.CommitOptions) string {
	t.Helper()
	repo, err := gogit.PlainOpen(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(w, file, content); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add(file); err != nil {
		t.Fatal(err)
	}
	opts.Author, opts.Committer = testSig(), testSig()
	h, err := w.Commit("signed commit "+file, &opts)
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// writeFile writes a file into a go-git work tree.
func writeFile(w *gogit.Worktree, name, content string) error {
	f, err := w.Filesystem.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(content)); err != nil {
		return err
	}
	return f.Close()
}

// sshSignedTag writes an annotated tag of target signed with an SSHSIG
// signature, built object by object since go-git only signs tags with PGP.
func sshSignedTag(t testing.TB, r *localRepo, name, target string, s sshSigSigner) {
	t.Helper()
	repo, err := gogit.PlainOpen(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	tag := &object.Tag{Name: name, Tagger: *testSig(), Message: "ssh signed " + name + "\n",
		TargetType: plumbing.CommitObject, Target: plumbing.NewHash(target)}
	var unsigned plumbing.MemoryObject
	if err := tag.EncodeWithoutSignature(&unsigned); err != nil {
		t.Fatal(err)
	}
	payload, err := readAll(&unsigned)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tag.PGPSignature = string(sig)
	obj := repo.Storer.NewEncodedObject()
	if err := tag.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	ref := plumbing.NewHashReference(plumbing.NewTagReferenceName(name), h)
	if err := repo.Storer.SetReference(ref); err != nil {
		t.Fatal(err)
	}
}
