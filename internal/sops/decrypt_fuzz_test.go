package sops

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/windlass-dev/windlass/internal/testutil/sopsfixture"
)

// fuzzKeySeed derives the OpenPGP key of the fuzz corpus. Every fuzz worker
// derives the same key, so mutated documents get past key recovery and
// exercise the parsers, the walker and the MAC.
var fuzzKeySeed = [32]byte{'w', 'i', 'n', 'd', 'l', 'a', 's', 's'}

// encValuePattern finds ENC[…] values and their data field in a document.
var encValuePattern = regexp.MustCompile(`ENC\[AES256_GCM,data:([^,\]]*)[^\]]*\]`)

// FuzzDecrypt feeds mutated SOPS documents of every format to the decryptor,
// with and without the MAC check, and checks that it never panics and that
// its errors never quote a plaintext, a ciphertext or key material.
func FuzzDecrypt(f *testing.F) {
	key, err := sopsfixture.NewPGPKeyFromSeed(fuzzKeySeed)
	if err != nil {
		f.Fatal(err)
	}
	entry, err := key.SecretEntry()
	if err != nil {
		f.Fatal(err)
	}
	d, err := NewDecryptor(map[string][]byte{"fuzz.asc": entry})
	if err != nil {
		f.Fatal(err)
	}
	addFuzzSeeds(f, key)

	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		format := allFormats[int(which)%len(allFormats)]
		for _, verifyMAC := range []bool{true, false} {
			_, err := d.decrypt(data, format, verifyMAC)
			if err == nil {
				continue
			}
			if errors.Is(err, errDecoderPanic) {
				t.Fatalf("decrypting a %s document panicked", format)
			}
			checkFuzzError(t, err.Error(), data)
		}
	})
}

func addFuzzSeeds(f *testing.F, key *sopsfixture.PGPKey) {
	one := [][]sopsfixture.Recipient{{key}}
	for i, format := range allFormats {
		for _, opts := range []sopsfixture.Options{
			{KeyGroups: one},
			{KeyGroups: one, EncryptedRegex: "^(password|token|db)$", MACOnlyEncrypted: true},
			{KeyGroups: one, EncryptedCommentRegex: "sops:enc"},
			{KeyGroups: [][]sopsfixture.Recipient{{key}, {key}}, ShamirThreshold: 2},
		} {
			for _, plain := range [][]byte{richPlain(format), plainFor(format)} {
				enc, err := sopsfixture.Encrypt(plain, sopsfixture.Format(format), opts)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(enc, uint8(i))
			}
		}
	}
	for i, doc := range []string{
		"", "{}", "a: &x [*x]\n", "a: &a [1, 2]\nb: [*a, *a]\nsops: {}\n",
		`{"sops": {"key_groups": [{"age": [{"recipient": "r", "enc": "e"}]}], "lastmodified": "2024-01-01T00:00:00Z"}}`,
		"sops_lastmodified=2024-01-01T00:00:00Z\nsops_age__list_0__map_enc=x\n",
		"[sops]\nkey_groups__list_1__map_pgp__list_0__map_fp = x\n",
	} {
		f.Add([]byte(doc), uint8(i))
	}
}

// checkFuzzError fails when an error quotes what it must not: a plaintext
// (the seed corpus marks every secret with "s3cr3t", which never appears in
// clear in an encrypted seed), an ENC[…] value or its data, or key material.
func checkFuzzError(t *testing.T, msg string, data []byte) {
	t.Helper()
	if !bytes.Contains(data, []byte("s3cr3t")) && strings.Contains(msg, "s3cr3t") {
		t.Fatalf("error quotes a plaintext: %s", msg)
	}
	for _, forbidden := range []string{"PRIVATE KEY", "AGE-SECRET-KEY"} {
		if strings.Contains(msg, forbidden) {
			t.Fatalf("error quotes key material: %s", msg)
		}
	}
	for _, m := range encValuePattern.FindAllSubmatch(data, -1) {
		if strings.Contains(msg, string(m[0])) || (len(m[1]) >= 12 && strings.Contains(msg, string(m[1]))) {
			t.Fatalf("error quotes a ciphertext: %s", msg)
		}
	}
}
