package sops

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/windlass-dev/windlass/internal/testutil/sopsfixture"
)

func TestParseMetadata(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{
			"lastmodified": "2024-01-01T10:00:00.123+02:00",
			"mac":          "ENC[…]",
			"age":          []any{map[string]any{"recipient": "age1x", "enc": "stanza"}},
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		raw     map[string]any
		check   func(g *WithT, m *metadata)
		wantErr string
	}{
		{
			name: "defaults, and lastmodified re-formatted in RFC 3339, without fractions, for the MAC",
			raw:  base(nil),
			check: func(g *WithT, m *metadata) {
				g.Expect(m.lastModified).To(Equal("2024-01-01T10:00:00+02:00"))
				g.Expect(m.rules.unencryptedSuffix).To(Equal("_unencrypted"))
				g.Expect(m.keyGroups).To(HaveLen(1))
				g.Expect(m.keyGroups[0].age).To(Equal([]masterKey{{id: "age1x", enc: "stanza"}}))
			},
		},
		{
			name: "flattened formats give strings for numbers and booleans",
			raw:  base(map[string]any{"shamir_threshold": "2", "mac_only_encrypted": "true"}),
			check: func(g *WithT, m *metadata) {
				g.Expect(m.shamirThreshold).To(Equal(2))
				g.Expect(m.macOnlyEncrypted).To(BeTrue())
			},
		},
		{
			name: "top-level keys take precedence over key_groups; cloud keys are noted",
			raw: base(map[string]any{
				"kms":        []any{map[string]any{"arn": "arn:aws:kms:x", "enc": "e"}},
				"key_groups": []any{map[string]any{"pgp": []any{map[string]any{"fp": "F", "enc": "e"}}}},
			}),
			check: func(g *WithT, m *metadata) {
				g.Expect(m.keyGroups).To(HaveLen(1))
				g.Expect(m.keyGroups[0].unsupported).To(Equal([]string{"kms"}))
				g.Expect(m.keyGroups[0].pgp).To(BeEmpty())
			},
		},
		{
			name: "an invalid regular expression matches nothing",
			raw:  base(map[string]any{"encrypted_regex": "("}),
			check: func(g *WithT, m *metadata) {
				g.Expect(m.rules.encrypts([]string{"("}, nil, false)).To(BeFalse())
			},
		},
		{
			name:    "two rules",
			raw:     base(map[string]any{"encrypted_regex": "^a$", "unencrypted_suffix": "_x"}),
			wantErr: "more than one of",
		},
		{name: "no lastmodified", raw: map[string]any{"age": []any{}}, wantErr: "lastmodified"},
		{name: "no keys", raw: map[string]any{"lastmodified": "2024-01-01T00:00:00Z"}, wantErr: "no master keys"},
		{name: "key list of strings", raw: base(map[string]any{"pgp": []any{"s3cr3t"}}), wantErr: "pgp[0] is not a map"},
		{name: "threshold not a number", raw: base(map[string]any{"shamir_threshold": "s3cr3t"}), wantErr: "shamir_threshold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			m, err := parseMetadata(tt.raw)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				expectNoSecrets(g, err)
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			tt.check(g, m)
		})
	}
}

func TestUnflatten(t *testing.T) {
	g := NewWithT(t)
	m, err := unflatten([]flatEntry{
		{"version", "3.13.3"},
		{"key_groups__list_0__map_age__list_0__map_recipient", "age1a"},
		{"key_groups__list_0__map_age__list_0__map_enc", "e0"},
		{"key_groups__list_1__map_pgp__list_0__map_fp", "F"},
	})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(m).To(Equal(map[string]any{
		"version": "3.13.3",
		"key_groups": []any{
			map[string]any{"age": []any{map[string]any{"recipient": "age1a", "enc": "e0"}}},
			map[string]any{"pgp": []any{map[string]any{"fp": "F"}}},
		},
	}))

	for name, entries := range map[string][]flatEntry{
		"missing list item": {{"age__list_1__map_enc", "x"}},
		"value and map":     {{"age", "x"}, {"age__map_enc", "y"}},
		"repeated entry":    {{"mac", "x"}, {"mac", "y"}},
		"bad index":         {{"age__list_x", "y"}},
	} {
		_, err := unflatten(entries)
		g.Expect(err).To(HaveOccurred(), name)
	}
}

func TestParseEncValue(t *testing.T) {
	g := NewWithT(t)
	v, ok := parseEncValue("ENC[AES256_GCM,data:AAAA,iv:AQID,tag:BAUG,type:str]")
	g.Expect(ok).To(BeTrue())
	g.Expect(v.data).To(Equal([]byte{0, 0, 0}))
	g.Expect(v.iv).To(Equal([]byte{1, 2, 3}))
	g.Expect(v.typ).To(Equal("str"))
	for _, bad := range []string{
		"s3cr3t", "ENC[AES256_GCM,data:AAAA,iv:AQID,tag:BAUG,type:str",
		"ENC[AES256_GCM,data:,iv:AQID,tag:BAUG,type:str]", "ENC[AES256_GCM,data:A!,iv:AQID,tag:BAUG,type:str]",
		"ENC[AES256_GCM,iv:AQID,data:AAAA,tag:BAUG,type:str]", "ENC[AES256_GCM,data:AAAA,iv:AQID,tag:BAUG,type:]",
		"ENC[AES128_GCM,data:AAAA,iv:AQID,tag:BAUG,type:str]",
	} {
		_, ok := parseEncValue(bad)
		g.Expect(ok).To(BeFalse(), bad)
	}
}

// TestDecrypt_Limits feeds documents built to exhaust memory or the stack.
func TestDecrypt_Limits(t *testing.T) {
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.secret()})
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := 0, "a"; i < 8; i++ {
		name := string(rune('b' + i))
		laughs += name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = name
	}
	tests := map[string]struct {
		doc    string
		format Format
		want   string
	}{
		"YAML alias expansion":    {laughs + "sops: {}\n", FormatYAML, "aliases expand to too many values"},
		"deep JSON":               {`{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "}", FormatJSON, "nests deeper"},
		"deep YAML":               {"a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000), FormatYAML, "syntax error"},
		"YAML list document":      {"- a\n- b\n", FormatYAML, "lists are not supported"},
		"YAML non-string key":     {"1: a\nsops: {}\n", FormatYAML, "key that is not a string"},
		"YAML duplicate key":      {"a: 1\na: 2\nsops: {}\n", FormatYAML, `"a" appears twice`},
		"JSON trailing data":      {`{"sops": {}} {"a": 1}`, FormatJSON, "data follows"},
		"two sops keys in JSON":   {`{"sops": {}, "sops": {}}`, FormatJSON, "more than one sops"},
		"two [sops] sections":     {"[sops]\na = 1\n[sops]\nb = 2\n", FormatINI, "more than one [sops]"},
		"sops metadata not a map": {"sops: s3cr3t\n", FormatYAML, "does not hold a map"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := d.decrypt([]byte(tt.doc), tt.format, true)
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			expectNoSecrets(g, err)
		})
	}
}

// TestDecrypt_CommentsInLists checks that a YAML list item that decrypts to
// a comment, which is how SOPS stores a comment inside a list, turns back
// into a comment, while the same in a JSON list, which has no comments, is
// an error.
func TestDecrypt_CommentsInLists(t *testing.T) {
	g := NewWithT(t)
	key, err := sopsfixture.NewAgeKey()
	g.Expect(err).ToNot(HaveOccurred())
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.SecretEntry()})
	one := sopsfixture.Options{KeyGroups: [][]sopsfixture.Recipient{{key}}}

	enc, err := sopsfixture.Encrypt([]byte("l:\n    # first\n    - a\n    # last\n"), sopsfixture.FormatYAML, one)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(strings.Count(string(enc), "type:comment]")).To(Equal(2))
	out, err := d.decrypt(enc, FormatYAML, true)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(out)).To(Equal("l:\n    # first\n    - a\n    # last\n"))

	enc, err = sopsfixture.Encrypt([]byte(`{"l": ["s3cr3t-a", "b"]}`), sopsfixture.FormatJSON, one)
	g.Expect(err).ToNot(HaveOccurred())
	tampered := []byte(strings.Replace(string(enc), "type:str]", "type:comment]", 1))
	for _, verify := range []bool{true, false} {
		_, err = d.decrypt(tampered, FormatJSON, verify)
		g.Expect(err).To(HaveOccurred())
		expectNoSecrets(g, err)
	}
	_, err = d.decrypt(tampered, FormatJSON, false)
	g.Expect(err).To(MatchError(ContainSubstring(`"l": the value decrypted to a comment`)))
}

// TestSafeKey checks that a dotenv line that lost its key does not put part
// of its ciphertext in the error as a key.
func TestSafeKey(t *testing.T) {
	g := NewWithT(t)
	key, err := sopsfixture.NewAgeKey()
	g.Expect(err).ToNot(HaveOccurred())
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.SecretEntry()})
	enc, err := sopsfixture.Encrypt([]byte("A=s3cr3t-value-with-padding\n"), sopsfixture.FormatDotenv,
		sopsfixture.Options{KeyGroups: [][]sopsfixture.Recipient{{key}}})
	g.Expect(err).ToNot(HaveOccurred())
	mangled := []byte(strings.Replace(string(enc), "A=ENC[", "ENC[", 1))
	_, err = d.decrypt(mangled, FormatDotenv, true)
	g.Expect(err).To(MatchError(ErrValueDecryption))
	g.Expect(err.Error()).To(ContainSubstring("redacted"))
	expectNoSecrets(g, err, "data:")
}
