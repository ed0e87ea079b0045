package git

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
)

// Suffixes of the entries of the Secret named by spec.verify.secretRef.
const (
	// PGPKeySuffix marks an armored PGP public keyring.
	PGPKeySuffix = ".asc"
	// SSHKeySuffix marks SSH public keys in authorized_keys format.
	SSHKeySuffix = ".sshpub"
)

// Armor headers that tell the signature formats apart.
const (
	pgpSignatureHeader = "-----BEGIN PGP SIGNATURE-----"
	sshSignatureHeader = "-----BEGIN SSH SIGNATURE-----"
)

// Verify checks the signature of the commit against trusted keys: entries of
// keys ending in .asc are armored PGP public keyrings, entries ending in
// .sshpub are SSH public keys, one per line; other entries are ignored. It
// returns the signer: the fingerprint of the PGP primary key (upper-case hex)
// or the SHA256 fingerprint of the SSH key ("SHA256:...").
//
// An unsigned commit, a signature by none of the trusted keys and a payload
// that does not match its signature are errors. A partial commit (see
// IsConcreteCommit) cannot be verified.
func (c *Commit) Verify(keys map[string][]byte) (string, error) {
	signer, err := verifySignature(c.Encoded, c.Signature, keys)
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", c.Hash, err)
	}
	return signer, nil
}

// Verify checks the signature of the annotated tag, like [Commit.Verify].
func (t *Tag) Verify(keys map[string][]byte) (string, error) {
	signer, err := verifySignature(t.Encoded, t.Signature, keys)
	if err != nil {
		return "", fmt.Errorf("tag %s: %w", t.Name, err)
	}
	return signer, nil
}

// verifySignature dispatches on the signature format.
func verifySignature(payload []byte, signature string, keys map[string][]byte) (string, error) {
	sig := strings.TrimSpace(signature)
	switch {
	case sig == "":
		return "", errors.New("not signed")
	case len(payload) == 0:
		return "", errors.New("no payload to verify (partial commit?)")
	case strings.HasPrefix(sig, sshSignatureHeader):
		trusted, err := sshKeys(keys)
		if err != nil {
			return "", err
		}
		return verifySSHSignature(payload, []byte(sig), trusted)
	case strings.HasPrefix(sig, pgpSignatureHeader):
		return verifyPGP(payload, sig, keys)
	}
	return "", errors.New("signature is neither PGP nor SSH")
}

// verifyPGP checks an armored PGP detached signature against the keyrings
// of keys.
func verifyPGP(payload []byte, signature string, keys map[string][]byte) (string, error) {
	var ring openpgp.EntityList
	for _, name := range sortedKeys(keys) {
		if !strings.HasSuffix(name, PGPKeySuffix) {
			continue
		}
		entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(keys[name]))
		if err != nil {
			return "", fmt.Errorf("reading PGP keyring %q: %w", name, err)
		}
		ring = append(ring, entities...)
	}
	if len(ring) == 0 {
		return "", errors.New("signed with PGP but no trusted PGP keys (*.asc) are configured")
	}
	entity, err := openpgp.CheckArmoredDetachedSignature(ring, bytes.NewReader(payload),
		strings.NewReader(signature), nil)
	if err != nil {
		return "", fmt.Errorf("PGP signature not verified by any trusted key: %w", err)
	}
	return fmt.Sprintf("%X", entity.PrimaryKey.Fingerprint), nil
}

// sshKeys parses the SSH public keys of keys.
func sshKeys(keys map[string][]byte) ([]ssh.PublicKey, error) {
	var trusted []ssh.PublicKey
	for _, name := range sortedKeys(keys) {
		if !strings.HasSuffix(name, SSHKeySuffix) {
			continue
		}
		parsed, err := parseAuthorizedKeys(keys[name])
		if err != nil {
			return nil, fmt.Errorf("reading SSH keys %q: %w", name, err)
		}
		trusted = append(trusted, parsed...)
	}
	if len(trusted) == 0 {
		return nil, errors.New("signed with SSH but no trusted SSH keys (*.sshpub) are configured")
	}
	return trusted, nil
}

// parseAuthorizedKeys parses authorized_keys lines; blank lines and comments
// are skipped.
func parseAuthorizedKeys(b []byte) ([]ssh.PublicKey, error) {
	var keys []ssh.PublicKey
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys found")
	}
	return keys, nil
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
