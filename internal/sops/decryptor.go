package sops

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

// NewDecryptor builds a Decryptor from the data of a decryption Secret.
// Entries whose name ends in `.agekey` hold age identities, one per line
// (`#` comments and blank lines allowed); entries ending in `.asc` hold
// armored OpenPGP private keys, which must not be passphrase-protected. Name
// suffixes match without regard to case; every other entry is ignored. An
// entry that cannot be parsed is an error that names the entry, not its
// content.
func NewDecryptor(keys map[string][]byte) (*Decryptor, error) {
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

// errDecoderPanic is wrapped by the error returned when decoding malformed
// input panicked. It should never happen; the fuzz test looks for it.
var errDecoderPanic = errors.New("the decoder failed on malformed input")

// decrypt reads a SOPS document, recovers its data key, decrypts every value
// and comment, checks the MAC when verifyMAC is set and writes the plaintext
// document in the same format. Only messages written by this package reach
// the caller: the format libraries' own messages can quote the document.
func (d *Decryptor) decrypt(data []byte, format Format, verifyMAC bool) (out []byte, err error) {
	defer func() {
		// Never let malformed input take the controller down, and do not
		// print the panic value, which may hold document content.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("cannot decrypt %s document: %w", format, errDecoderPanic)
		}
	}()

	doc, err := parseDocument(data, format)
	if err != nil {
		return nil, err
	}
	if err := d.decryptTree(doc, verifyMAC); err != nil {
		return nil, err
	}
	out, err = doc.render()
	if err != nil {
		return nil, fmt.Errorf("cannot write the decrypted %s document: %w", format, err)
	}
	return out, nil
}

// decryptTree recovers the data key of a parsed document and decrypts its
// tree in place, checking the MAC when verifyMAC is set.
func (d *Decryptor) decryptTree(doc *parsedDocument, verifyMAC bool) error {
	meta, err := parseMetadata(doc.meta)
	if err != nil {
		return err
	}
	key, err := d.keys.dataKey(meta)
	if err != nil {
		return err
	}
	c, err := newValueCipher(key)
	if err != nil {
		return err
	}
	w := newWalker(c, meta, doc.listComments)
	if err := w.walk(doc.roots); err != nil {
		return err
	}
	if verifyMAC {
		if err := checkMAC(meta, c, w.mac.sum()); err != nil {
			return err
		}
	}
	return w.strayCommentError()
}

// parsedDocument is a document read by a format reader: its tree (one root
// per YAML document, one for other formats), the SOPS metadata (nil when
// there is none) and how to write the document back once the tree has been
// walked.
type parsedDocument struct {
	roots  []*node
	meta   map[string]any
	render func() ([]byte, error)
	// listComments is set when list items may decrypt to comments (YAML).
	listComments bool
}

// errSyntax stands for a format library's error, whose message can quote the
// document.
var errSyntax = errors.New("syntax error (details withheld, they may quote content)")

// parseDocument reads a document in the given format. A document without
// SOPS metadata gives [ErrNotEncrypted].
func parseDocument(data []byte, format Format) (*parsedDocument, error) {
	var (
		doc *parsedDocument
		err error
	)
	switch format {
	case FormatYAML:
		doc, err = parseYAMLDocument(data)
	case FormatJSON:
		doc, err = parseJSONDocument(data, false)
	case FormatBinary:
		doc, err = parseJSONDocument(data, true)
	case FormatDotenv:
		doc, err = parseDotenvDocument(data)
	case FormatINI:
		doc, err = parseINIDocument(data)
	default:
		return nil, fmt.Errorf("unsupported SOPS format %q", format)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot parse SOPS-encrypted %s document: %w", format, err)
	}
	if doc.meta == nil {
		return nil, ErrNotEncrypted
	}
	return doc, nil
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
