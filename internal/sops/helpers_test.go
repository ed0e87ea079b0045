package sops

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	sopspgp "github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/shamir"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	. "github.com/onsi/gomega"
)

// ageKey is an age identity generated for a test.
type ageKey struct {
	id *age.X25519Identity
}

func newAgeKey(t *testing.T) ageKey {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	return ageKey{id: id}
}

func (k ageKey) recipient() string { return k.id.Recipient().String() }

// secret returns the content of an `.agekey` entry, with a comment line.
func (k ageKey) secret() []byte {
	return []byte("# created: for a test\n# public key: " + k.recipient() + "\n" + k.id.String() + "\n")
}

// masterKey returns a SOPS age master key for this recipient.
func (k ageKey) masterKey(t *testing.T) keys.MasterKey {
	t.Helper()
	mk, err := sopsage.MasterKeyFromRecipient(k.recipient())
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	return mk
}

// pgpKey is an OpenPGP key pair generated for a test, with its public key in
// a keyring file that SOPS' PGP master key can encrypt to.
type pgpKey struct {
	entity  *openpgp.Entity
	pubRing string
}

func newPGPKey(t *testing.T) pgpKey {
	t.Helper()
	g := NewWithT(t)
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e, err := openpgp.NewEntity("windlass test", "", "test@windlass.invalid", cfg)
	g.Expect(err).ToNot(HaveOccurred())

	var pub bytes.Buffer
	g.Expect(e.Serialize(&pub)).To(Succeed())
	ring := filepath.Join(t.TempDir(), "pubring.gpg")
	g.Expect(os.WriteFile(ring, pub.Bytes(), 0o600)).To(Succeed())
	return pgpKey{entity: e, pubRing: ring}
}

func (k pgpKey) fingerprint() string {
	return strings.ToUpper(hex.EncodeToString(k.entity.PrimaryKey.Fingerprint))
}

// secret returns the armored private key, the content of an `.asc` entry.
func (k pgpKey) secret(t *testing.T) []byte {
	t.Helper()
	g := NewWithT(t)
	var buf bytes.Buffer
	w, err := pgparmor.Encode(&buf, openpgp.PrivateKeyType, nil)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(k.entity.SerializePrivate(w, nil)).To(Succeed())
	g.Expect(w.Close()).To(Succeed())
	return buf.Bytes()
}

// masterKey returns a SOPS PGP master key that encrypts with the public
// keyring file, so no GnuPG is involved.
func (k pgpKey) masterKey() keys.MasterKey {
	mk := sopspgp.NewMasterKeyFromFingerprint(k.fingerprint())
	sopspgp.PubRing(k.pubRing).ApplyToMasterKey(mk)
	return mk
}

// encryptOptions tune the SOPS metadata of a test document.
type encryptOptions struct {
	// groups are the key groups; more than one splits the data key with
	// Shamir.
	groups []sops.KeyGroup
	// threshold is the Shamir threshold (default: all groups).
	threshold int
	// encryptedRegex, when set, replaces the default unencrypted suffix.
	encryptedRegex string
	// macOnlyEncrypted computes the MAC over encrypted values only.
	macOnlyEncrypted bool
}

// encrypt produces a SOPS document the way `sops --encrypt` does: parse the
// plain document with the format's store, generate a data key, encrypt it
// with every master key (or a Shamir part per group), encrypt the tree with
// the AES cipher, encrypt the MAC with the data key and the last-modified
// time as additional data, and emit the encrypted document.
func encrypt(t *testing.T, plain []byte, format Format, opts encryptOptions) []byte {
	t.Helper()
	g := NewWithT(t)

	cfg := config.NewStoresConfig()
	var st sops.Store
	switch format {
	case FormatYAML:
		st = sopsyaml.NewStore(&cfg.YAML)
	case FormatJSON:
		st = sopsjson.NewStore(&cfg.JSON)
	case FormatDotenv:
		st = dotenv.NewStore(&cfg.Dotenv)
	case FormatINI:
		st = ini.NewStore(&cfg.INI)
	case FormatBinary:
		st = sopsjson.NewBinaryStore(&cfg.JSONBinary)
	}
	branches, err := st.LoadPlainFile(plain)
	g.Expect(err).ToNot(HaveOccurred())

	meta := sops.Metadata{
		KeyGroups:        opts.groups,
		ShamirThreshold:  opts.threshold,
		EncryptedRegex:   opts.encryptedRegex,
		MACOnlyEncrypted: opts.macOnlyEncrypted,
		Version:          "3.13.3",
	}
	if meta.EncryptedRegex == "" {
		meta.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	tree := sops.Tree{Branches: branches, Metadata: meta}

	dataKey := make([]byte, 32)
	_, err = rand.Read(dataKey)
	g.Expect(err).ToNot(HaveOccurred())
	parts := [][]byte{dataKey}
	if len(opts.groups) > 1 {
		if tree.Metadata.ShamirThreshold == 0 {
			tree.Metadata.ShamirThreshold = len(opts.groups)
		}
		parts, err = shamir.Split(dataKey, len(opts.groups), tree.Metadata.ShamirThreshold)
		g.Expect(err).ToNot(HaveOccurred())
	}
	for i, group := range opts.groups {
		for _, mk := range group {
			g.Expect(mk.Encrypt(parts[i])).To(Succeed())
		}
	}

	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	g.Expect(err).ToNot(HaveOccurred())
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey,
		tree.Metadata.LastModified.Format(time.RFC3339))
	g.Expect(err).ToNot(HaveOccurred())

	out, err := st.EmitEncryptedFile(tree)
	g.Expect(err).ToNot(HaveOccurred())
	return out
}

// group is shorthand for a single key group.
func group(keys ...keys.MasterKey) []sops.KeyGroup {
	return []sops.KeyGroup{keys}
}

// newTestDecryptor builds a Decryptor and fails the test on error.
func newTestDecryptor(t *testing.T, entries map[string][]byte) *Decryptor {
	t.Helper()
	d, err := NewDecryptor(entries)
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	return d
}

// writeFile writes a file under dir, creating parent directories.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	g := NewWithT(t)
	g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(p, data, 0o600)).To(Succeed())
	return p
}
