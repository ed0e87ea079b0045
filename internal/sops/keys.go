package sops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"filippo.io/age"
	agearmor "filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/getsops/sops/v3/shamir"
)

const (
	// AgeKeySuffix is the suffix of decryption Secret entries that hold age
	// identities. It is matched without regard to case.
	AgeKeySuffix = ".agekey"
	// PGPKeySuffix is the suffix of decryption Secret entries that hold
	// armored OpenPGP private keys. It is matched without regard to case.
	PGPKeySuffix = ".asc"

	// maxDataKeyPart bounds what is read from a decrypted master key stanza. A
	// SOPS data key is 32 bytes, a Shamir part one byte more.
	maxDataKeyPart = 1 << 10
)

// ErrNoMatchingKey is wrapped by the error returned when none of the
// decryption Secret's keys can recover a document's data key. The message
// says which kind of key is missing and lists the document's public recipients
// (age recipients, PGP fingerprints), never key material.
var ErrNoMatchingKey = errors.New("no decryption key matches the SOPS document")

// keyring holds the private keys parsed from a decryption Secret.
type keyring struct {
	age []age.Identity
	pgp openpgp.EntityList
}

// parseKeys reads the age and OpenPGP entries of a decryption Secret. Entries
// are visited in name order so that errors are deterministic. Errors name the
// entry but never quote its content.
func parseKeys(entries map[string][]byte) (*keyring, error) {
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.Sort(names)

	kr := &keyring{}
	for _, name := range names {
		lower := strings.ToLower(name)
		switch {
		case strings.HasSuffix(lower, AgeKeySuffix):
			ids, err := parseAgeIdentities(entries[name])
			if err != nil {
				return nil, fmt.Errorf("decryption Secret entry %q: %w", name, err)
			}
			kr.age = append(kr.age, ids...)
		case strings.HasSuffix(lower, PGPKeySuffix):
			entities, err := parsePGPKeys(entries[name])
			if err != nil {
				return nil, fmt.Errorf("decryption Secret entry %q: %w", name, err)
			}
			kr.pgp = append(kr.pgp, entities...)
		}
	}
	return kr, nil
}

// parseAgeIdentities parses one identity per line. Blank lines and lines
// starting with '#' are skipped; surrounding white space (including the '\r'
// of CRLF files) is ignored. Plugin identities are refused because they run
// external programs.
func parseAgeIdentities(data []byte) ([]age.Identity, error) {
	var ids []age.Identity
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "AGE-PLUGIN-") {
			return nil, fmt.Errorf("line %d: age plugin identities are not supported", n+1)
		}
		parsed, err := age.ParseIdentities(strings.NewReader(line))
		if err != nil {
			// The age library keeps key material out of its errors, but the
			// line itself is secret: report the position only.
			return nil, fmt.Errorf("line %d: not a valid age identity", n+1)
		}
		ids = append(ids, parsed...)
	}
	if len(ids) == 0 {
		return nil, errors.New("no age identity found")
	}
	return ids, nil
}

// parsePGPKeys reads an armored key ring and keeps the entities that carry
// private key material. Passphrase-protected keys are refused: there is no
// way to supply a passphrase. Public-only entities are skipped, as GnuPG would
// import them without making them usable for decryption.
func parsePGPKeys(data []byte) (openpgp.EntityList, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
	if err != nil {
		return nil, errors.New("not a valid armored OpenPGP key ring")
	}
	var out openpgp.EntityList
	for _, e := range ring {
		if e.PrivateKey == nil {
			continue
		}
		locked := e.PrivateKey.Encrypted
		for _, sub := range e.Subkeys {
			if sub.PrivateKey != nil && sub.PrivateKey.Encrypted {
				locked = true
			}
		}
		if locked {
			return nil, fmt.Errorf("OpenPGP key %X is passphrase-protected; only unprotected keys are supported",
				e.PrimaryKey.Fingerprint)
		}
		out = append(out, e)
	}
	return out, nil
}

// missingKeys collects, per key kind, the public identifiers of the master
// keys that could not be used, to build an error that says what is missing.
type missingKeys struct {
	age         []string
	pgp         []string
	unsupported []string
	corrupt     []string
	empty       []string
}

func (m *missingKeys) add(list *[]string, v string) {
	if !slices.Contains(*list, v) {
		*list = append(*list, v)
	}
}

// dataKey recovers the document's data key from its key groups. With one
// group any master key of the group yields the key; with several, each group
// yields a Shamir part and at least shamir_threshold parts (all of them when
// the threshold is not set) are combined.
func (kr *keyring) dataKey(meta *metadata) ([]byte, error) {
	if len(meta.keyGroups) == 0 {
		return nil, errors.New("the SOPS metadata lists no master keys")
	}
	var (
		parts   [][]byte
		missing missingKeys
	)
	for _, group := range meta.keyGroups {
		if part := kr.decryptGroup(group, &missing); part != nil {
			parts = append(parts, part)
		}
	}
	if len(meta.keyGroups) == 1 {
		if len(parts) == 1 {
			return parts[0], nil
		}
		return nil, missing.err(0, 0)
	}
	threshold := meta.shamirThreshold
	if threshold <= 0 {
		threshold = len(meta.keyGroups)
	}
	if len(parts) < threshold {
		return nil, missing.err(len(parts), threshold)
	}
	key, err := shamir.Combine(parts)
	if err != nil {
		return nil, errors.New("cannot combine the Shamir parts of the SOPS data key")
	}
	return key, nil
}

// tryKeys returns the first data key part that one of keys decrypts. A key
// that matches none of the Secret's identities is listed in noMatch; one
// that matches but cannot be read is listed as corrupt, named by label and
// its public identifier.
func tryKeys(keys []masterKey, decrypt func(string) ([]byte, error), missing *missingKeys, noMatch *[]string, label string) []byte {
	for _, mk := range keys {
		part, err := decrypt(mk.enc)
		if err == nil {
			return part
		}
		if errors.Is(err, errNoMatch) {
			missing.add(noMatch, safeKey(mk.id))
		} else {
			missing.add(&missing.corrupt, label+safeKey(mk.id))
		}
	}
	return nil
}

// decryptGroup tries the age keys of a group first, then the PGP keys, which
// is SOPS' default decryption order. It returns nil when no key fits.
func (kr *keyring) decryptGroup(group keyGroup, missing *missingKeys) []byte {
	if part := tryKeys(group.age, kr.decryptAge, missing, &missing.age, "age recipient "); part != nil {
		return part
	}
	for _, typ := range group.unsupported {
		missing.add(&missing.unsupported, typ)
	}
	if part := tryKeys(group.pgp, kr.decryptPGP, missing, &missing.pgp, "PGP fingerprint "); part != nil {
		return part
	}
	if len(group.age)+len(group.pgp)+len(group.unsupported) == 0 {
		missing.add(&missing.empty, "empty")
	}
	return nil
}

// errNoMatch marks a master key for which the Secret holds no private key, as
// opposed to a stanza that is malformed.
var errNoMatch = errors.New("no matching private key")

func (kr *keyring) decryptAge(enc string) ([]byte, error) {
	if len(kr.age) == 0 {
		return nil, errNoMatch
	}
	trimmed := strings.TrimSpace(enc)
	var src io.Reader = strings.NewReader(trimmed)
	if strings.HasPrefix(trimmed, agearmor.Header) {
		src = agearmor.NewReader(src)
	}
	r, err := age.Decrypt(src, kr.age...)
	if err != nil {
		var noMatch *age.NoIdentityMatchError
		if errors.As(err, &noMatch) {
			return nil, errNoMatch
		}
		return nil, errors.New("malformed age stanza")
	}
	return readPart(r)
}

func (kr *keyring) decryptPGP(enc string) ([]byte, error) {
	if len(kr.pgp) == 0 {
		return nil, errNoMatch
	}
	var src io.Reader = strings.NewReader(enc)
	if block, err := pgparmor.Decode(strings.NewReader(enc)); err == nil {
		src = block.Body
	}
	md, err := openpgp.ReadMessage(src, kr.pgp, nil, nil)
	if err != nil {
		if errors.Is(err, pgperrors.ErrKeyIncorrect) {
			return nil, errNoMatch
		}
		return nil, errors.New("malformed OpenPGP message")
	}
	return readPart(md.UnverifiedBody)
}

func readPart(r io.Reader) ([]byte, error) {
	part, err := io.ReadAll(io.LimitReader(r, maxDataKeyPart+1))
	if err != nil || len(part) == 0 || len(part) > maxDataKeyPart {
		return nil, errors.New("malformed data key")
	}
	return part, nil
}

// err builds the user-facing error. got and need are the recovered and
// required Shamir parts when the document has several key groups.
func (m *missingKeys) err(got, need int) error {
	var reasons []string
	if len(m.age) > 0 {
		reasons = append(reasons, fmt.Sprintf(
			"no age identity (%s entry) matches recipient(s) %s", AgeKeySuffix, strings.Join(m.age, ", ")))
	}
	if len(m.pgp) > 0 {
		reasons = append(reasons, fmt.Sprintf(
			"no OpenPGP private key (%s entry) matches fingerprint(s) %s", PGPKeySuffix, strings.Join(m.pgp, ", ")))
	}
	if len(m.unsupported) > 0 {
		reasons = append(reasons, fmt.Sprintf(
			"master key type(s) %s are not supported (only age and PGP)", strings.Join(m.unsupported, ", ")))
	}
	if len(m.corrupt) > 0 {
		reasons = append(reasons, fmt.Sprintf(
			"the encrypted data key is malformed for %s", strings.Join(m.corrupt, ", ")))
	}
	if len(m.empty) > 0 {
		reasons = append(reasons, "a key group lists no master keys")
	}
	msg := strings.Join(reasons, "; ")
	if need > 0 {
		msg = fmt.Sprintf("recovered %d of the %d Shamir key groups required: %s", got, need, msg)
	}
	return fmt.Errorf("%w: %s", ErrNoMatchingKey, msg)
}
