package sopsfixture

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestEncryptYAMLHidesOnlyTheData(t *testing.T) {
	g := NewWithT(t)
	key, err := NewAgeKey()
	g.Expect(err).NotTo(HaveOccurred())
	out, err := EncryptYAML([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n"), key.Recipient())
	g.Expect(err).NotTo(HaveOccurred())
	s := string(out)
	g.Expect(s).NotTo(ContainSubstring("hunter2"))
	g.Expect(s).To(ContainSubstring("name: db"))
	g.Expect(s).To(ContainSubstring("ENC[AES256_GCM"))
	g.Expect(strings.Count(s, key.Recipient())).To(Equal(1))
}

// TestEncryptRoundTrips decrypts, with SOPS itself, what Encrypt wrote in
// every format, for age and PGP recipients in one group.
func TestEncryptRoundTrips(t *testing.T) {
	plain := map[Format]string{
		FormatYAML:   "a: hunter2\nb_unencrypted: visible\n",
		FormatJSON:   `{"a": "hunter2", "b_unencrypted": "visible"}`,
		FormatDotenv: "A=hunter2\nB_unencrypted=visible\n",
		FormatINI:    "[s]\na = hunter2\nb_unencrypted = visible\n",
		FormatBinary: "hunter2\n",
	}
	ageKey, err := NewAgeKey()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	pgpKey, err := NewPGPKey()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			g := NewWithT(t)
			out, err := Encrypt([]byte(plain[f]), f, Options{KeyGroups: [][]Recipient{{pgpKey, ageKey}}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(out)).NotTo(ContainSubstring("hunter2"))
			g.Expect(string(out)).To(ContainSubstring(pgpKey.Fingerprint()))
			if f != FormatBinary {
				g.Expect(string(out)).To(ContainSubstring("visible"))
			}
			dec, err := DecryptWithSOPS(out, f, ageKey)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(dec)).To(ContainSubstring("hunter2"))
		})
	}
}

func TestPGPKeySecretEntry(t *testing.T) {
	g := NewWithT(t)
	k, err := NewPGPKey()
	g.Expect(err).NotTo(HaveOccurred())
	entry, err := k.SecretEntry()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(entry)).To(HavePrefix("-----BEGIN PGP PRIVATE KEY BLOCK-----"))
	g.Expect(k.Fingerprint()).To(MatchRegexp(`^[0-9A-F]{40}$`))
}

func TestNewPGPKeyFromSeed(t *testing.T) {
	g := NewWithT(t)
	a, err := NewPGPKeyFromSeed([32]byte{1})
	g.Expect(err).NotTo(HaveOccurred())
	b, err := NewPGPKeyFromSeed([32]byte{1})
	g.Expect(err).NotTo(HaveOccurred())
	c, err := NewPGPKeyFromSeed([32]byte{2})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Fingerprint()).To(Equal(b.Fingerprint()))
	g.Expect(a.Fingerprint()).NotTo(Equal(c.Fingerprint()))
}
