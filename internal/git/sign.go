package git

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
)

// Signer signs the commits of a [Workspace] (see CommitOptions.Signer): it
// returns the armored detached signature of message, the commit object
// without its signature. go-git's Signer interface is the same, so a
// Signer can be handed to go-git as it is.
type Signer interface {
	Sign(message io.Reader) ([]byte, error)
}

// InvalidSigningKeyError reports a signing key that can never sign: not a
// key, not a private key, encrypted without the right passphrase. Like
// [InvalidAuthError], it is a spec error. Its message never holds the key or
// the passphrase.
type InvalidSigningKeyError struct {
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *InvalidSigningKeyError) Error() string {
	return "invalid signing key: " + e.Reason
}

// NewOpenPGPSigner returns a Signer for the first private key of an armored
// OpenPGP keyring (the git.asc entry of the Secret named by
// spec.git.commit.signingKey), decrypted with passphrase when it is
// encrypted. It signs with the key's signing subkey, or its primary key,
// as gpg does; the signature is armored ("-----BEGIN PGP SIGNATURE-----"),
// as git writes it.
func NewOpenPGPSigner(armoredPrivateKey, passphrase []byte) (Signer, error) {
	keyring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armoredPrivateKey))
	if err != nil {
		return nil, &InvalidSigningKeyError{Reason: "not an armored OpenPGP keyring"}
	}
	var entity *openpgp.Entity
	for _, e := range keyring {
		if e.PrivateKey != nil {
			entity = e
			break
		}
	}
	if entity == nil {
		return nil, &InvalidSigningKeyError{Reason: "the OpenPGP keyring holds no private key"}
	}
	key, ok := entity.SigningKey(time.Now())
	if !ok || key.PrivateKey == nil {
		return nil, &InvalidSigningKeyError{Reason: "the OpenPGP key has no valid signing key (expired or revoked?)"}
	}
	if key.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, &InvalidSigningKeyError{Reason: "the OpenPGP key is encrypted and no passphrase is given"}
		}
		// A wrong passphrase shows as a checksum or authentication
		// failure of the decrypted key material.
		if err := entity.DecryptPrivateKeys(passphrase); err != nil {
			return nil, &InvalidSigningKeyError{Reason: "the passphrase does not decrypt the OpenPGP key"}
		}
	}
	return &openPGPSigner{entity: entity}, nil
}

// openPGPSigner signs with a decrypted OpenPGP entity.
type openPGPSigner struct {
	entity *openpgp.Entity
}

// Sign implements Signer.
func (s *openPGPSigner) Sign(message io.Reader) ([]byte, error) {
	var sig bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&sig, s.entity, message, nil); err != nil {
		return nil, fmt.Errorf("OpenPGP signature: %w", err)
	}
	return sig.Bytes(), nil
}

// NewSSHSigner returns a Signer for an SSH private key in PEM or OpenSSH
// format (the identity entry of the Secret), decrypted with password when
// it is encrypted. Its signatures are in the SSHSIG format, namespace "git"
// and hash sha512, armored "-----BEGIN SSH SIGNATURE-----": what git writes
// with gpg.format=ssh, verifiable with "ssh-keygen -Y verify" or
// "git verify-commit" and an allowed signers file.
func NewSSHSigner(identity, password []byte) (Signer, error) {
	signer, err := ssh.ParsePrivateKey(identity)
	var missing *ssh.PassphraseMissingError
	switch {
	case err == nil:
	case !errors.As(err, &missing):
		return nil, &InvalidSigningKeyError{Reason: "not an SSH private key"}
	case len(password) == 0:
		return nil, &InvalidSigningKeyError{Reason: "the SSH key is encrypted and no password is given"}
	default:
		if signer, err = ssh.ParsePrivateKeyWithPassphrase(identity, password); err != nil {
			return nil, &InvalidSigningKeyError{Reason: "the password does not decrypt the SSH key"}
		}
	}
	return sshSigSigner{signer: signer, namespace: sshSigNamespace, hashAlg: "sha512"}, nil
}

// sshSigSigner signs Git objects with an SSHSIG signature, following
// OpenSSH's PROTOCOL.sshsig.
type sshSigSigner struct {
	signer    ssh.Signer
	namespace string
	hashAlg   string
}

// Sign implements Signer.
func (s sshSigSigner) Sign(message io.Reader) ([]byte, error) {
	payload, err := io.ReadAll(message)
	if err != nil {
		return nil, err
	}
	return s.sign(payload)
}

// sign returns the armored SSHSIG signature of payload.
func (s sshSigSigner) sign(payload []byte) ([]byte, error) {
	return s.signWithAlgorithm(payload, "")
}

// signWithAlgorithm is sign with a chosen signature algorithm ("" for the
// default).
func (s sshSigSigner) signWithAlgorithm(payload []byte, algorithm string) ([]byte, error) {
	var digest []byte
	if s.hashAlg == "sha256" {
		sum := sha256.Sum256(payload)
		digest = sum[:]
	} else {
		sum := sha512.Sum512(payload)
		digest = sum[:]
	}
	signed := append([]byte(sshSigMagic), ssh.Marshal(struct {
		Namespace, Reserved, HashAlg string
		Hash                         []byte
	}{s.namespace, "", s.hashAlg, digest})...)
	sig, err := s.rawSign(signed, algorithm)
	if err != nil {
		return nil, fmt.Errorf("SSH signature: %w", err)
	}
	blob := append([]byte(sshSigMagic), ssh.Marshal(struct {
		Version                      uint32
		PublicKey                    []byte
		Namespace, Reserved, HashAlg string
		Signature                    []byte
	}{sshSigVersion, s.signer.PublicKey().Marshal(), s.namespace, "", s.hashAlg, ssh.Marshal(sig)})...)
	return armorSSHSig(blob), nil
}

// rawSign signs with algorithm, or by default with rsa-sha2-512 for RSA keys
// (SSHSIG forbids SHA-1) and the key's own algorithm otherwise.
func (s sshSigSigner) rawSign(data []byte, algorithm string) (*ssh.Signature, error) {
	if algorithm == "" && s.signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		algorithm = ssh.KeyAlgoRSASHA512
	}
	if as, ok := s.signer.(ssh.AlgorithmSigner); ok && algorithm != "" {
		return as.SignWithAlgorithm(rand.Reader, data, algorithm)
	}
	return s.signer.Sign(rand.Reader, data)
}

// armorSSHSig wraps an SSHSIG blob in its armor, 70 columns wide as
// ssh-keygen writes it.
func armorSSHSig(blob []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString(blob)
	var out strings.Builder
	out.WriteString(sshSignatureHeader + "\n")
	for len(b64) > 70 {
		out.WriteString(b64[:70] + "\n")
		b64 = b64[70:]
	}
	out.WriteString(b64 + "\n" + sshSigFooter + "\n")
	return []byte(out.String())
}
