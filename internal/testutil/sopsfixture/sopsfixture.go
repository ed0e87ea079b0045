// Package sopsfixture encrypts documents the way `sops --encrypt` does, in
// Go, with the SOPS library itself, so that tests can put SOPS-encrypted
// files in repositories without the sops binary, and check a decryptor
// against what SOPS writes. It is test-only code: the production binary must
// not link the SOPS library.
package sopsfixture

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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
)

// Format is a SOPS document format.
type Format string

// The formats SOPS stores support.
const (
	// FormatYAML is a YAML document or stream.
	FormatYAML Format = "yaml"
	// FormatJSON is a JSON object.
	FormatJSON Format = "json"
	// FormatDotenv is a KEY=VALUE file.
	FormatDotenv Format = "dotenv"
	// FormatINI is an INI file.
	FormatINI Format = "ini"
	// FormatBinary is any file, encrypted whole into a JSON envelope.
	FormatBinary Format = "binary"
)

// Formats lists every format.
var Formats = []Format{FormatYAML, FormatJSON, FormatDotenv, FormatINI, FormatBinary}

// Recipient is a key a document can be encrypted for: an *AgeKey or a
// *PGPKey.
type Recipient interface {
	// masterKey returns a fresh SOPS master key for the recipient and a
	// function that releases what it needed.
	masterKey() (keys.MasterKey, func(), error)
}

// AgeKey is an age identity and the Secret entry that holds it.
type AgeKey struct {
	identity *age.X25519Identity
}

// NewAgeKey generates an age identity.
func NewAgeKey() (*AgeKey, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	return &AgeKey{identity: id}, nil
}

// Recipient returns the public key.
func (k *AgeKey) Recipient() string { return k.identity.Recipient().String() }

// SecretEntry returns the content of a `*.agekey` Secret entry.
func (k *AgeKey) SecretEntry() []byte { return []byte(k.identity.String() + "\n") }

func (k *AgeKey) masterKey() (keys.MasterKey, func(), error) {
	mk, err := sopsage.MasterKeyFromRecipient(k.Recipient())
	return mk, func() {}, err
}

// PGPKey is an unprotected OpenPGP key pair.
type PGPKey struct {
	entity *openpgp.Entity
}

// NewPGPKey generates an EdDSA/ECDH OpenPGP key pair.
func NewPGPKey() (*PGPKey, error) {
	return newPGPKey(&packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
}

// NewPGPKeyFromSeed derives an EdDSA/ECDH OpenPGP key pair from seed: the
// same seed gives the same key. Fuzz tests need it, as each of their worker
// processes must hold the key the seed corpus was encrypted for.
func NewPGPKeyFromSeed(seed [32]byte) (*PGPKey, error) {
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return newPGPKey(&packet.Config{
		Algorithm: packet.PubKeyAlgoEdDSA,
		Rand:      mathrand.NewChaCha8(seed),
		Time:      func() time.Time { return created },
	})
}

func newPGPKey(cfg *packet.Config) (*PGPKey, error) {
	e, err := openpgp.NewEntity("sopsfixture", "", "fixture@windlass.invalid", cfg)
	if err != nil {
		return nil, err
	}
	return &PGPKey{entity: e}, nil
}

// Fingerprint returns the upper-case hex fingerprint SOPS records.
func (k *PGPKey) Fingerprint() string {
	return strings.ToUpper(hex.EncodeToString(k.entity.PrimaryKey.Fingerprint))
}

// SecretEntry returns the armored private key, the content of a `*.asc`
// Secret entry.
func (k *PGPKey) SecretEntry() ([]byte, error) {
	var buf bytes.Buffer
	w, err := pgparmor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := k.entity.SerializePrivate(w, nil); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// masterKey returns a SOPS PGP master key that encrypts with a public
// keyring file, so that no GnuPG is involved.
func (k *PGPKey) masterKey() (keys.MasterKey, func(), error) {
	dir, err := os.MkdirTemp("", "sopsfixture-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	var pub bytes.Buffer
	if err := k.entity.Serialize(&pub); err != nil {
		cleanup()
		return nil, nil, err
	}
	ring := filepath.Join(dir, "pubring.gpg")
	if err := os.WriteFile(ring, pub.Bytes(), 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	mk := sopspgp.NewMasterKeyFromFingerprint(k.Fingerprint())
	sopspgp.PubRing(ring).ApplyToMasterKey(mk)
	return mk, cleanup, nil
}

// Options select the metadata of an encrypted document. At most one of the
// rule fields may be set; with none, SOPS' default unencrypted suffix
// `_unencrypted` applies.
type Options struct {
	// KeyGroups lists the recipients of each key group. More than one group
	// splits the data key with Shamir's secret sharing.
	KeyGroups [][]Recipient
	// ShamirThreshold is the number of groups needed (default: all).
	ShamirThreshold int

	// The encryption rule, as `sops --encrypt` takes it.
	UnencryptedSuffix       string
	EncryptedSuffix         string
	UnencryptedRegex        string
	EncryptedRegex          string
	UnencryptedCommentRegex string
	EncryptedCommentRegex   string
	// MACOnlyEncrypted computes the MAC over encrypted values only.
	MACOnlyEncrypted bool
}

// EncryptYAML encrypts every value of a YAML document (but those whose key
// ends in _unencrypted, and the apiVersion, kind and metadata of a
// Kubernetes object) for the age recipients.
func EncryptYAML(plain []byte, recipients ...string) ([]byte, error) {
	var group []Recipient
	for _, r := range recipients {
		group = append(group, ageRecipient(r))
	}
	return Encrypt(plain, FormatYAML, Options{
		KeyGroups:      [][]Recipient{group},
		EncryptedRegex: "^(data|stringData)$",
	})
}

// ageRecipient is an age public key without its identity.
type ageRecipient string

func (r ageRecipient) masterKey() (keys.MasterKey, func(), error) {
	mk, err := sopsage.MasterKeyFromRecipient(string(r))
	return mk, func() {}, err
}

// Encrypt produces a SOPS document the way `sops --encrypt` does: parse the
// plain document with the format's store, generate a data key, encrypt it
// with every master key (or a Shamir part per group), encrypt the tree with
// the AES cipher, encrypt the MAC with the data key and the last-modified
// time as additional data, and emit the encrypted document.
func Encrypt(plain []byte, format Format, opts Options) ([]byte, error) {
	st, err := store(format)
	if err != nil {
		return nil, err
	}
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("parsing the plain document: %w", err)
	}
	groups, cleanup, err := keyGroups(opts.KeyGroups)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	tree := sops.Tree{Branches: branches, Metadata: metadata(opts, groups)}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	if err := encryptDataKey(&tree.Metadata, dataKey); err != nil {
		return nil, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey,
		tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return st.EmitEncryptedFile(tree)
}

func store(format Format) (sops.Store, error) {
	cfg := config.NewStoresConfig()
	switch format {
	case FormatYAML:
		return sopsyaml.NewStore(&cfg.YAML), nil
	case FormatJSON:
		return sopsjson.NewStore(&cfg.JSON), nil
	case FormatDotenv:
		return dotenv.NewStore(&cfg.Dotenv), nil
	case FormatINI:
		return ini.NewStore(&cfg.INI), nil
	case FormatBinary:
		return sopsjson.NewBinaryStore(&cfg.JSONBinary), nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

func keyGroups(in [][]Recipient) ([]sops.KeyGroup, func(), error) {
	var cleanups []func()
	cleanup := func() {
		for _, c := range cleanups {
			c()
		}
	}
	if len(in) == 0 {
		return nil, cleanup, errors.New("no key groups")
	}
	groups := make([]sops.KeyGroup, 0, len(in))
	for _, recipients := range in {
		var g sops.KeyGroup
		for _, r := range recipients {
			mk, done, err := r.masterKey()
			if err != nil {
				return nil, cleanup, err
			}
			cleanups = append(cleanups, done)
			g = append(g, mk)
		}
		groups = append(groups, g)
	}
	return groups, cleanup, nil
}

func metadata(opts Options, groups []sops.KeyGroup) sops.Metadata {
	m := sops.Metadata{
		KeyGroups:               groups,
		ShamirThreshold:         opts.ShamirThreshold,
		UnencryptedSuffix:       opts.UnencryptedSuffix,
		EncryptedSuffix:         opts.EncryptedSuffix,
		UnencryptedRegex:        opts.UnencryptedRegex,
		EncryptedRegex:          opts.EncryptedRegex,
		UnencryptedCommentRegex: opts.UnencryptedCommentRegex,
		EncryptedCommentRegex:   opts.EncryptedCommentRegex,
		MACOnlyEncrypted:        opts.MACOnlyEncrypted,
		Version:                 "3.13.3",
	}
	if m.EncryptedSuffix == "" && m.UnencryptedRegex == "" && m.EncryptedRegex == "" &&
		m.UnencryptedCommentRegex == "" && m.EncryptedCommentRegex == "" && m.UnencryptedSuffix == "" {
		m.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	return m
}

// encryptDataKey encrypts the data key, or with several groups one Shamir
// part per group, with every master key.
func encryptDataKey(m *sops.Metadata, dataKey []byte) error {
	parts := [][]byte{dataKey}
	if len(m.KeyGroups) > 1 {
		if m.ShamirThreshold == 0 {
			m.ShamirThreshold = len(m.KeyGroups)
		}
		var err error
		if parts, err = shamir.Split(dataKey, len(m.KeyGroups), m.ShamirThreshold); err != nil {
			return err
		}
	}
	for i, group := range m.KeyGroups {
		for _, mk := range group {
			if err := mk.Encrypt(parts[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// DecryptWithSOPS decrypts a document encrypted for a single key group that
// includes key, with the SOPS library's own stores, cipher and MAC check,
// and returns what `sops --decrypt` would print. Tests compare a decryptor's
// output with it.
func DecryptWithSOPS(doc []byte, format Format, key *AgeKey) ([]byte, error) {
	st, err := store(format)
	if err != nil {
		return nil, err
	}
	tree, err := st.LoadEncryptedFile(doc)
	if err != nil {
		return nil, err
	}
	if len(tree.Metadata.KeyGroups) != 1 {
		return nil, errors.New("DecryptWithSOPS needs a single key group")
	}
	dataKey, err := ageDataKey(tree.Metadata.KeyGroups[0], key)
	if err != nil {
		return nil, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey,
		tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	if stored != mac {
		return nil, sops.MacMismatch
	}
	return st.EmitPlainFile(tree.Branches)
}

func ageDataKey(group sops.KeyGroup, key *AgeKey) ([]byte, error) {
	for _, mk := range group {
		if ak, ok := mk.(*sopsage.MasterKey); ok && ak.Recipient == key.Recipient() {
			sopsage.ParsedIdentities{key.identity}.ApplyToMasterKey(ak)
			return ak.Decrypt()
		}
	}
	return nil, errors.New("the document is not encrypted for the age key")
}
