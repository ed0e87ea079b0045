package sops

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/logging"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/sirupsen/logrus"
)

// Format is the document format of SOPS-encrypted content.
type Format string

const (
	// FormatYAML is a YAML document (or stream), metadata under `sops:`.
	FormatYAML Format = "yaml"
	// FormatJSON is a JSON object, metadata under "sops".
	FormatJSON Format = "json"
	// FormatDotenv is a KEY=VALUE file, metadata in `sops_*` entries.
	FormatDotenv Format = "dotenv"
	// FormatINI is an INI file, metadata in the `[sops]` section.
	FormatINI Format = "ini"
	// FormatBinary is a whole file encrypted as one value, stored in a JSON
	// envelope `{"data": "ENC[…]", "sops": {…}}`.
	FormatBinary Format = "binary"
)

// FormatForPath returns the format SOPS infers from a file name: `.yaml` and
// `.yml` are YAML, `.json` JSON, `.env` dotenv, `.ini` INI, anything else
// binary. The extension is matched without regard to case.
func FormatForPath(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return FormatYAML
	case ".json":
		return FormatJSON
	case ".env":
		return FormatDotenv
	case ".ini":
		return FormatINI
	default:
		return FormatBinary
	}
}

var (
	// ErrNotEncrypted is returned when the content has no SOPS metadata.
	ErrNotEncrypted = errors.New("content is not SOPS-encrypted")
	// ErrMACMismatch is wrapped by the error returned when a file's document
	// MAC does not match its content: a value was added, removed or changed
	// after encryption, or the MAC itself was altered.
	ErrMACMismatch = errors.New("SOPS MAC mismatch")
	// ErrValueDecryption is wrapped by the error returned when one value of a
	// document cannot be decrypted. The message names the key path and the
	// kind of failure, never the value.
	ErrValueDecryption = errors.New("cannot decrypt SOPS value")
)

// Decryptor decrypts SOPS documents with the age identities and OpenPGP
// private keys of one decryption Secret. It is safe for concurrent use.
type Decryptor struct {
	keys *keyring
}

var quietSOPS sync.Once

// NewDecryptor builds a Decryptor from the data of a decryption Secret.
// Entries whose name ends in `.agekey` hold age identities, one per line
// (`#` comments and blank lines allowed); entries ending in `.asc` hold
// armored OpenPGP private keys, which must not be passphrase-protected. Name
// suffixes match without regard to case; every other entry is ignored. An
// entry that cannot be parsed is an error that names the entry, not its
// content.
//
// NewDecryptor also lowers the SOPS library's own loggers to error level:
// they write straight to stderr and their warnings can quote document content.
func NewDecryptor(keys map[string][]byte) (*Decryptor, error) {
	quietSOPS.Do(func() { logging.SetLevel(logrus.ErrorLevel) })
	kr, err := parseKeys(keys)
	if err != nil {
		return nil, err
	}
	return &Decryptor{keys: kr}, nil
}

// DecryptFile reads the SOPS-encrypted file at path and returns its plaintext
// in the same format. The path must name a regular file (a symlink is refused:
// resolve it inside its root first) of at most [MaxEncryptedFileSize] bytes.
// The document MAC is verified. A file without SOPS metadata gives an error
// wrapping [ErrNotEncrypted].
func (d *Decryptor) DecryptFile(path string, format Format) ([]byte, error) {
	data, err := readRegularFile(path, path)
	if err != nil {
		return nil, err
	}
	out, err := d.decrypt(data, format, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// store is the part of a SOPS store this package needs.
type store interface {
	sops.EncryptedFileLoader
	sops.PlainFileEmitter
}

func newStore(format Format) (store, error) {
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
	default:
		return nil, fmt.Errorf("unsupported SOPS format %q", format)
	}
}

// decrypt loads a SOPS document, recovers its data key, decrypts every value
// and emits the plaintext document. Only messages written here reach the
// caller: the SOPS library's own errors can quote values and are dropped.
func (d *Decryptor) decrypt(data []byte, format Format, verifyMAC bool) (out []byte, err error) {
	defer func() {
		// Malformed input has made SOPS panic before; never let that take
		// the controller down, and do not print the panic value.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("cannot decrypt %s document: the SOPS library failed on malformed input", format)
		}
	}()

	st, err := newStore(format)
	if err != nil {
		return nil, err
	}
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		if errors.Is(err, sops.MetadataNotFound) {
			return nil, ErrNotEncrypted
		}
		return nil, fmt.Errorf("cannot parse SOPS-encrypted %s document (details withheld, they may quote content)", format)
	}
	key, err := d.keys.dataKey(&tree.Metadata)
	if err != nil {
		return nil, err
	}

	c := &redactingCipher{inner: aes.NewCipher()}
	mac, err := tree.Decrypt(key, c)
	if err != nil {
		// tree.Decrypt reports cipher failures as "Could not decrypt value";
		// the cipher has then recorded a redacted error for that value.
		msg := err.Error()
		switch {
		case c.lastErr != nil && strings.Contains(msg, "Could not decrypt value"):
			return nil, c.lastErr
		case strings.Contains(msg, "Expected encrypted value as string"):
			return nil, fmt.Errorf("%w: a value that should be encrypted is not an ENC[…] string", ErrValueDecryption)
		default:
			return nil, fmt.Errorf("%w: the %s document holds a value SOPS cannot process", ErrValueDecryption, format)
		}
	}
	if verifyMAC {
		if err := checkMAC(&tree.Metadata, key, mac); err != nil {
			return nil, err
		}
	}
	out, err = st.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fmt.Errorf("cannot write the decrypted %s document (details withheld, they may quote secret values)", format)
	}
	return out, nil
}

// checkMAC compares the MAC computed over the decrypted tree with the one
// stored, encrypted, in the metadata. Neither value is put in the error: the
// computed MAC is a hash of the plaintext.
func checkMAC(meta *sops.Metadata, key []byte, computed string) error {
	stored, err := aes.NewCipher().Decrypt(meta.MessageAuthenticationCode, key, meta.LastModified.Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("%w: the stored MAC cannot be decrypted with the data key", ErrMACMismatch)
	}
	s, ok := stored.(string)
	if !ok || s == "" {
		return fmt.Errorf("%w: the document has no valid MAC", ErrMACMismatch)
	}
	if subtle.ConstantTimeCompare([]byte(s), []byte(computed)) != 1 {
		return fmt.Errorf("%w: the document was changed after it was encrypted", ErrMACMismatch)
	}
	return nil
}

// encryptedValue matches the shape of a SOPS value, to tell a malformed value
// from one that fails authentication.
var encryptedValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// redactingCipher wraps the SOPS AES cipher and replaces its errors, which
// can quote the ciphertext or, after a successful decryption whose type tag
// was tampered with, the plaintext (security.md row 18).
type redactingCipher struct {
	inner   aes.Cipher
	lastErr error
}

// Encrypt is never used: the cipher only decrypts.
func (c *redactingCipher) Encrypt(any, []byte, string) (string, error) {
	return "", errors.New("encryption is not supported")
}

// Decrypt decrypts one value. additionalData is the value's key path, each
// key followed by ':'.
func (c *redactingCipher) Decrypt(ciphertext string, key []byte, additionalData string) (any, error) {
	v, err := c.inner.Decrypt(ciphertext, key, additionalData)
	if err == nil {
		return v, nil
	}
	c.lastErr = fmt.Errorf("%w at %q: %s", ErrValueDecryption, strings.TrimSuffix(additionalData, ":"), classify(ciphertext, err))
	return nil, c.lastErr
}

func classify(ciphertext string, err error) string {
	var numErr *strconv.NumError
	var timeErr *time.ParseError
	switch {
	case !encryptedValue.MatchString(ciphertext):
		return "not a SOPS-encrypted value"
	case errors.As(err, &numErr), errors.As(err, &timeErr):
		return "the decrypted value does not match its declared type (the type tag was altered)"
	case strings.HasPrefix(err.Error(), "Unknown datatype"):
		return "unknown value type"
	default:
		return "authentication failed (the value was altered or encrypted with another data key)"
	}
}

// looksEncrypted reports whether data carries the markers of a SOPS document
// of the given format: at least one encrypted value and the metadata key.
func looksEncrypted(data []byte, format Format) bool {
	if !bytes.Contains(data, []byte("ENC[AES256_GCM,")) {
		return false
	}
	switch format {
	case FormatDotenv:
		return bytes.Contains(data, []byte("sops_"))
	case FormatINI:
		return bytes.Contains(data, []byte("[sops]"))
	case FormatYAML:
		return bytes.Contains(data, []byte("sops:"))
	default:
		return bytes.Contains(data, []byte(`"sops"`))
	}
}
