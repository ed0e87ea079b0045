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
// # How decryption works
//
// This package reads the SOPS file format itself; it does not link the SOPS
// library, whose stores pull in every cloud KMS SDK. Decryption runs in
// four steps:
//
//  1. A format reader parses the document and takes its metadata out: the
//     top-level `sops` key in YAML and JSON (store_yaml.go, store_json.go,
//     the binary format being a JSON envelope `{"data": …, "sops": …}`),
//     the `sops_*` entries in dotenv and the `[sops]` section in INI, both
//     flattened (store_flat.go, flatten.go). What remains becomes a
//     format-neutral tree of maps, lists, scalars and comments, in the order
//     SOPS reads them (tree.go). YAML is read with go.yaml.in/yaml/v3 and
//     decrypted in its node tree, so key order, styles and comments are
//     kept; INI is read and written with gopkg.in/ini.v1, as SOPS does.
//  2. The metadata (metadata.go) gives the master keys, the encryption rule
//     (unencrypted_suffix, the default `_unencrypted`, or one of
//     encrypted_suffix, unencrypted_regex, encrypted_regex,
//     unencrypted_comment_regex, encrypted_comment_regex), mac_only_encrypted
//     and the encrypted MAC. The data key is recovered in process from the
//     age and OpenPGP master keys (keys.go), with filippo.io/age and
//     ProtonMail/go-crypto, and recombined with `sops/v3/shamir` when the
//     document has several key groups. SOPS' key service, its GnuPG
//     integration and its environment lookups (SOPS_AGE_KEY_FILE and
//     friends) are never used, so a tenant can only ever decrypt with the
//     keys of its own Secret.
//  3. A walker visits the tree in document order. Each value the rule
//     selects is an `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]` string,
//     decrypted with AES-256-GCM bound to the value's key path and read back
//     as its declared type (cipher.go); comments are decrypted the same way.
//     Every value, or with mac_only_encrypted every encrypted one, is hashed
//     into the document MAC (mac.go).
//  4. The reader writes the document back in its format with the decrypted
//     values; the binary format returns the raw data.
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
// only, the parsers' own messages, which can echo content, are replaced (a
// YAML error keeps its line number), and a key or recipient read from the
// document that looks like a ciphertext is redacted (security.md row 18).
// The type tag of a value is outside the GCM tag: a value that does not read
// as its declared type is an error that does not quote it, and so is a value
// that decrypts to a comment anywhere but in a YAML list, where SOPS stores
// encrypted comments that way. Malformed input never panics the controller:
// nesting and YAML alias expansion are bounded, and a panic in a parser is
// recovered. Files larger than [MaxEncryptedFileSize] and anything that is
// not a regular file are refused (row 17), and generator references must
// stay inside the source root, also through symlinks. Extensions match
// without regard to case (row 44).
package sops
