// Package sopsfixture encrypts documents the way `sops --encrypt` does, in
// Go, so that tests can put SOPS-encrypted files in repositories without the
// sops binary.
package sopsfixture

import (
	"crypto/rand"
	"fmt"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

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

// EncryptYAML encrypts every value of a YAML document (but those whose key
// ends in _unencrypted, and the apiVersion, kind and metadata of a
// Kubernetes object) for the age recipients.
func EncryptYAML(plain []byte, recipients ...string) ([]byte, error) {
	cfg := config.NewStoresConfig()
	store := sopsyaml.NewStore(&cfg.YAML)
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("parsing the plain document: %w", err)
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		group = append(group, keys.MasterKey(mk))
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{group},
		EncryptedRegex: "^(data|stringData)$",
		Version:        "3.13.3",
	}}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	for _, mk := range group {
		if err := mk.Encrypt(dataKey); err != nil {
			return nil, err
		}
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}
