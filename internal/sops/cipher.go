package sops

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// An encrypted SOPS value is a string of the form
//
//	ENC[AES256_GCM,data:<base64>,iv:<base64>,tag:<base64>,type:<type>]
//
// where data and tag are the AES-GCM ciphertext and authentication tag of the
// value's text, iv the GCM nonce (32 bytes when SOPS wrote it) and type how
// the text is read back: str, int, float, bool, bytes, time or comment. The
// additional data bound to the tag is the value's key path (see aadFor), so
// a ciphertext moved to another key fails authentication.
const (
	encPrefix = "ENC[AES256_GCM,"
	encSuffix = "]"
)

// Reasons a value fails to decrypt. They are put after the key path in the
// error; none of them quotes the value.
var (
	errNotEncValue    = errors.New("not a SOPS-encrypted value")
	errAuthentication = errors.New("authentication failed (the value was altered or encrypted with another data key)")
	errTypeMismatch   = errors.New("the decrypted value does not match its declared type (the type tag was altered)")
	errUnknownType    = errors.New("unknown value type")
)

// commentText is the plaintext of a value whose type tag is "comment".
type commentText string

// encValue is a parsed ENC[…] string.
type encValue struct {
	data, iv, tag []byte
	typ           string
}

// parseEncValue splits an ENC[…] string into its fields. The base64 alphabet
// has no comma, so the fields are separated by the first comma after each
// label.
func parseEncValue(s string) (encValue, bool) {
	body, ok := strings.CutPrefix(s, encPrefix)
	if !ok {
		return encValue{}, false
	}
	body, ok = strings.CutSuffix(body, encSuffix)
	if !ok {
		return encValue{}, false
	}
	var v encValue
	fields := strings.SplitN(body, ",", 4)
	if len(fields) != 4 {
		return encValue{}, false
	}
	targets := []*[]byte{&v.data, &v.iv, &v.tag}
	for i, label := range []string{"data:", "iv:", "tag:"} {
		text, ok := strings.CutPrefix(fields[i], label)
		if !ok || text == "" {
			return encValue{}, false
		}
		raw, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return encValue{}, false
		}
		*targets[i] = raw
	}
	v.typ, ok = strings.CutPrefix(fields[3], "type:")
	if !ok || v.typ == "" {
		return encValue{}, false
	}
	return v, true
}

// valueCipher decrypts the values of one document with its data key.
type valueCipher struct {
	block cipher.Block
	gcm   map[int]cipher.AEAD // by nonce size
}

func newValueCipher(dataKey []byte) (*valueCipher, error) {
	block, err := aes.NewCipher(dataKey)
	if err != nil {
		return nil, errors.New("the recovered data key is not a valid AES key")
	}
	return &valueCipher{block: block, gcm: map[int]cipher.AEAD{}}, nil
}

// decrypt authenticates and decrypts one ENC[…] string bound to aad and
// returns it typed: string, int, float64, bool, []byte, time.Time or
// commentText. An empty string stands for an empty value and is returned
// as is, as SOPS never encrypts one. Errors are one of the reasons above.
func (c *valueCipher) decrypt(s, aad string) (any, error) {
	if s == "" {
		return "", nil
	}
	v, ok := parseEncValue(s)
	if !ok {
		return nil, errNotEncValue
	}
	gcm, err := c.aead(len(v.iv))
	if err != nil {
		return nil, errNotEncValue
	}
	sealed := make([]byte, 0, len(v.data)+len(v.tag))
	sealed = append(append(sealed, v.data...), v.tag...)
	text, err := gcm.Open(nil, v.iv, sealed, []byte(aad))
	if err != nil {
		return nil, errAuthentication
	}
	return typedValue(text, v.typ)
}

func (c *valueCipher) aead(nonceSize int) (cipher.AEAD, error) {
	if g, ok := c.gcm[nonceSize]; ok {
		return g, nil
	}
	g, err := cipher.NewGCMWithNonceSize(c.block, nonceSize)
	if err != nil {
		return nil, err
	}
	c.gcm[nonceSize] = g
	return g, nil
}

// typedValue reads decrypted text as the type its tag declares. Conversion
// errors are replaced: strconv and time errors quote their input.
func typedValue(text []byte, typ string) (any, error) {
	s := string(text)
	var (
		v   any
		err error
	)
	switch typ {
	case "str":
		return s, nil
	case "bytes":
		return text, nil
	case "comment":
		return commentText(s), nil
	case "int":
		v, err = strconv.Atoi(s)
	case "float":
		v, err = strconv.ParseFloat(s, 64)
	case "bool":
		v, err = strconv.ParseBool(s)
	case "time":
		var t time.Time
		err = t.UnmarshalText(text)
		v = t
	default:
		return nil, errUnknownType
	}
	if err != nil {
		return nil, errTypeMismatch
	}
	return v, nil
}

// aadFor returns the additional data of a value or comment at path: each key
// followed by ':'. List indices are not part of the path.
func aadFor(path []string) string {
	var b strings.Builder
	for _, k := range path {
		b.WriteString(k)
		b.WriteByte(':')
	}
	if len(path) == 0 {
		b.WriteByte(':')
	}
	return b.String()
}
