// Package sops decrypts SOPS-encrypted content for the kustomize controller
// (Kustomization `spec.decryption: {provider: sops, secretRef}`).
//
// A [Decryptor] is built with [NewDecryptor] from the data of the Secret that
// `decryption.secretRef` names. Entries whose name ends in `.agekey` hold age
// identities (X25519 `AGE-SECRET-KEY-1…` and hybrid post-quantum
// `AGE-SECRET-KEY-PQ-1…`, one per line, `#` comments allowed); entries ending
// in `.asc` hold armored OpenPGP private keys. Suffixes match without regard
// to case. Every other entry is ignored: cloud KMS and Vault credentials are
// not supported by this package yet.
//
// The Decryptor offers three entry points:
//
//   - [Decryptor.DecryptObject] decrypts, in place, a Secret that carries a
//     top-level `sops` metadata key (a manifest encrypted with `sops
//     --encrypt`). Other objects, and objects annotated with
//     `kustomize.toolkit.fluxcd.io/decrypt: Disabled`, are left alone.
//   - [Decryptor.DecryptFile] returns the plaintext of one encrypted file in a
//     given [Format] (YAML, JSON, dotenv, INI or binary).
//   - [Decryptor.DecryptKustomizeSources] follows the kustomization graph from
//     a directory of a (temporary) source tree and decrypts, in place, the
//     files that `secretGenerator` entries reference through `files:`,
//     `envs:` and `env:`, before kustomize reads them.
//
// # How SOPS is used
//
// The document formats, the value cipher (AES-256-GCM with the value's key path
// as additional data) and the MAC are SOPS' own code: the format stores under
// `sops/v3/stores`, `sops/v3/aes` and `sops.Tree`. The data key is recovered
// here, in process, from the age and OpenPGP master keys listed in the
// document's metadata (with Shamir recombination through `sops/v3/shamir`
// when there are several key groups), using filippo.io/age and
// ProtonMail/go-crypto directly. SOPS' key service, its GnuPG integration and
// its environment lookups (SOPS_AGE_KEY_FILE and friends) are never used, so
// a tenant can only ever decrypt with the keys of its own Secret.
//
// # Integrity
//
// Every encrypted value is authenticated by AES-GCM bound to its key path, so
// a changed, corrupted or moved ciphertext is always rejected. Files
// ([Decryptor.DecryptFile], [Decryptor.DecryptKustomizeSources]) are read
// as written, so the document MAC is verified too and a mismatch is an error
// ([ErrMACMismatch]). [Decryptor.DecryptObject] cannot verify the document
// MAC: the MAC is an ordered hash over every value of the file as written,
// unencrypted ones included, while an unstructured object has lost the key
// order and, after `kustomize build`, carries fields kustomize injected
// (namespace, labels, name prefixes and suffixes).
//
// # Safety
//
// Errors never contain a decrypted value, a ciphertext or key material: a value
// that fails to decrypt is reported by its key path and the kind of failure
// only, and the library's own messages, which can echo values, are replaced
// (security.md row 18). Files larger than [MaxEncryptedFileSize] and anything
// that is not a regular file are refused (row 17), and generator references
// must stay inside the source root, also through symlinks. Extensions match
// without regard to case (row 44).
package sops
