package git

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/ssh"
)

// The SSHSIG format (OpenSSH PROTOCOL.sshsig), as written by
// "ssh-keygen -Y sign" and by git with gpg.format=ssh.
const (
	sshSigMagic     = "SSHSIG"
	sshSigVersion   = 1
	sshSigNamespace = "git"
	sshSigFooter    = "-----END SSH SIGNATURE-----"
)

// sshSigBlob is an SSHSIG signature after the magic preamble.
type sshSigBlob struct {
	Version   uint32
	PublicKey []byte
	Namespace string
	Reserved  []byte
	HashAlg   string
	Signature []byte
}

// sshSignedData is the structure the SSHSIG signature is made over, after the
// magic preamble.
type sshSignedData struct {
	Namespace string
	Reserved  []byte
	HashAlg   string
	Hash      []byte
}

// sshSigValue is the wire form of an SSH signature.
type sshSigValue struct {
	Format string
	Blob   []byte
	Rest   []byte `ssh:"rest"`
}

// verifySSHSignature checks an armored SSHSIG signature over payload. The
// namespace must be "git" and the signing key one of trusted. It returns the
// SHA256 fingerprint of the key.
func verifySSHSignature(payload, armored []byte, trusted []ssh.PublicKey) (string, error) {
	sig, err := parseSSHSignature(armored)
	if err != nil {
		return "", err
	}
	if sig.Namespace != sshSigNamespace {
		return "", fmt.Errorf("SSH signature namespace is %q, not %q", sig.Namespace, sshSigNamespace)
	}
	pub, err := ssh.ParsePublicKey(sig.PublicKey)
	if err != nil {
		return "", fmt.Errorf("SSH signature: parsing public key: %w", err)
	}
	fingerprint := ssh.FingerprintSHA256(pub)
	if !containsKey(trusted, pub) {
		return "", fmt.Errorf("SSH signature by %s, which is not a trusted key", fingerprint)
	}
	signedData, err := sshSigSignedData(payload, sig)
	if err != nil {
		return "", err
	}
	var value sshSigValue
	if err := ssh.Unmarshal(sig.Signature, &value); err != nil {
		return "", fmt.Errorf("SSH signature: malformed signature value: %w", err)
	}
	if value.Format == ssh.KeyAlgoRSA {
		return "", errors.New("SSH signature uses ssh-rsa (SHA-1), which is not accepted")
	}
	s := &ssh.Signature{Format: value.Format, Blob: value.Blob, Rest: value.Rest}
	if err := pub.Verify(signedData, s); err != nil {
		return "", fmt.Errorf("SSH signature by %s does not match the payload: %w", fingerprint, err)
	}
	return fingerprint, nil
}

// parseSSHSignature decodes an armored SSHSIG signature.
func parseSSHSignature(armored []byte) (*sshSigBlob, error) {
	text := strings.TrimSpace(string(armored))
	body, ok := strings.CutPrefix(text, sshSignatureHeader)
	if !ok {
		return nil, errors.New("SSH signature: missing armor header")
	}
	body, ok = strings.CutSuffix(body, sshSigFooter)
	if !ok {
		return nil, errors.New("SSH signature: missing armor footer")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, fmt.Errorf("SSH signature: invalid base64: %w", err)
	}
	rest, ok := bytes.CutPrefix(raw, []byte(sshSigMagic))
	if !ok {
		return nil, errors.New("SSH signature: missing SSHSIG preamble")
	}
	var sig sshSigBlob
	if err := ssh.Unmarshal(rest, &sig); err != nil {
		return nil, fmt.Errorf("SSH signature: malformed: %w", err)
	}
	if sig.Version != sshSigVersion {
		return nil, fmt.Errorf("SSH signature: unsupported version %d", sig.Version)
	}
	return &sig, nil
}

// sshSigSignedData builds the blob the signature covers: the preamble, the
// namespace, the reserved field, the hash algorithm and H(payload).
func sshSigSignedData(payload []byte, sig *sshSigBlob) ([]byte, error) {
	h, err := sshSigHash(sig.HashAlg)
	if err != nil {
		return nil, err
	}
	h.Write(payload)
	data := ssh.Marshal(sshSignedData{
		Namespace: sig.Namespace,
		Reserved:  sig.Reserved,
		HashAlg:   sig.HashAlg,
		Hash:      h.Sum(nil),
	})
	return append([]byte(sshSigMagic), data...), nil
}

// sshSigHash returns the hash an SSHSIG hash algorithm names.
func sshSigHash(name string) (hash.Hash, error) {
	switch name {
	case "sha256":
		return sha256.New(), nil
	case "sha512":
		return sha512.New(), nil
	}
	return nil, fmt.Errorf("SSH signature: unsupported hash algorithm %q", name)
}

// containsKey reports whether key is one of keys.
func containsKey(keys []ssh.PublicKey, key ssh.PublicKey) bool {
	want := key.Marshal()
	for _, k := range keys {
		if bytes.Equal(k.Marshal(), want) {
			return true
		}
	}
	return false
}
