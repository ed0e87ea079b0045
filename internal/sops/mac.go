package sops

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// The document MAC is a SHA-512 over the text of every value of the document
// in document order (keys and comments are not hashed, nulls are skipped),
// written as upper-case hex and stored encrypted under the `mac` metadata
// key, with the `lastmodified` time as additional data. With
// mac_only_encrypted only the values that are encrypted are hashed, and the
// hash starts with SHA-256("sops") so that the two kinds of MAC never agree.

// macSeedOnlyEncrypted is written first into a mac_only_encrypted MAC.
var macSeedOnlyEncrypted = sha256.Sum256([]byte("sops"))

// docMAC accumulates the MAC of a document while it is walked.
type docMAC struct {
	h hash.Hash
}

func newDocMAC(onlyEncrypted bool) *docMAC {
	m := &docMAC{h: sha512.New()}
	if onlyEncrypted {
		m.h.Write(macSeedOnlyEncrypted[:])
	}
	return m
}

// add hashes the text of one plaintext value.
func (m *docMAC) add(v any) error {
	b, err := macText(v)
	if err != nil {
		return err
	}
	m.h.Write(b)
	return nil
}

func (m *docMAC) sum() string {
	return strings.ToUpper(hex.EncodeToString(m.h.Sum(nil)))
}

// errUnhashable is returned for a value of a type SOPS cannot hash.
var errUnhashable = errors.New("the value has a type SOPS does not support")

// macText renders a value the way SOPS hashes it: strings and bytes as they
// are, integers in decimal, floats in the shortest decimal form without an
// exponent, booleans as True/False and times in RFC 3339 with nanoseconds.
func macText(v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	case int:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case float64:
		return strconv.AppendFloat(nil, v, 'f', -1, 64), nil
	case bool:
		if v {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case time.Time:
		b, err := v.MarshalText()
		if err != nil {
			return nil, errUnhashable
		}
		return b, nil
	default:
		return nil, errUnhashable
	}
}

// checkMAC compares the MAC computed over the decrypted document with the one
// stored, encrypted, in the metadata. Neither value is put in the error: the
// computed MAC is a hash of the plaintext.
func checkMAC(meta *metadata, c *valueCipher, computed string) error {
	stored, err := c.decrypt(meta.mac, meta.lastModified)
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
