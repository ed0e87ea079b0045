package sops

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/windlass-dev/windlass/internal/testutil/sopsfixture"
	"go.yaml.in/yaml/v3"
	"gopkg.in/ini.v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// Rich plain documents for the round-trip tests: typed values, comments
// (including the markers of the comment rules), lists of maps, nested
// lists, multi-line and empty strings, and keys for every rule below.
var (
	richYAML = []byte(`# top comment
database:
    # the user
    user: admin
    password: s3cr3t-yaml-pa55 # inline comment
    port: 5432
    ratio: 0.25
    enabled: true
    disabled: false
    big: 12345678901
    empty: ""
    nothing: null
servers:
    # head of the list
    - name: alpha
      token: s3cr3t-alpha
      weight: 1.5
    - name: beta # inline in a list item
      token: s3cr3t-beta
      # comment inside a list item map
      weight: 2
nested:
    - - s3cr3t-inner
      - 3
    - []
multiline: |
    s3cr3t line one
    line two
quoted: "123"
# sops:enc
marked: s3cr3t-marked
# sops:plain
plain_marked: visible-marked
note_unencrypted: visible # stays
# trailing comment
`)
	richJSON = []byte(`{
	"token": "s3cr3t-json-t0ken",
	"port": 5432,
	"ratio": 0.25,
	"exp": 1e21,
	"enabled": true,
	"disabled": false,
	"nothing": null,
	"html": "<s3cr3t> & friends",
	"empty": "",
	"servers": [
		{"name": "alpha", "token": "s3cr3t-alpha", "weight": 1.5},
		{"name": "beta", "token": "s3cr3t-beta", "tags": ["a", "b"]}
	],
	"nested": [["s3cr3t-inner", 3], []],
	"obj": {},
	"note_unencrypted": "visible"
}`)
	richDotenv = []byte(`# top comment
USER=admin
password=s3cr3t-env-pa55
MULTI=s3cr3t line one\nline two
EMPTY=
#sops:enc
marked=s3cr3t-marked
#sops:plain
plain_marked=visible-marked
NOTE_unencrypted=visible
`)
	richINI = []byte(`; section comment
[db]
; the user
user = admin
password = s3cr3t-ini-pa55
port = 5432
; sops:enc
marked = s3cr3t-marked
note_unencrypted = visible

[other]
token = s3cr3t-other
`)
	richBinary = []byte("-----BEGIN s3cr3t BLOB-----\nline two\n\tindented line ü\n\n")
)

func richPlain(f Format) []byte {
	switch f {
	case FormatYAML:
		return richYAML
	case FormatJSON:
		return richJSON
	case FormatDotenv:
		return richDotenv
	case FormatINI:
		return richINI
	default:
		return richBinary
	}
}

// TestDecryptFile_RoundTrip decrypts documents encrypted by SOPS in every
// format under every encryption rule, and compares the result with the
// plain document and with what SOPS itself decrypts.
func TestDecryptFile_RoundTrip(t *testing.T) {
	key, err := sopsfixture.NewAgeKey()
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.SecretEntry()})
	one := [][]sopsfixture.Recipient{{key}}

	rules := []struct {
		name string
		opts sopsfixture.Options
		// hidden: every s3cr3t value is encrypted.
		hidden bool
	}{
		{"unencrypted_suffix (default)", sopsfixture.Options{}, true},
		{"explicit unencrypted_suffix", sopsfixture.Options{UnencryptedSuffix: "_unencrypted"}, true},
		{"encrypted_suffix", sopsfixture.Options{EncryptedSuffix: "word"}, false},
		{"encrypted_regex", sopsfixture.Options{EncryptedRegex: "^(password|token|servers|nested|multiline|db)$"}, false},
		{"unencrypted_regex", sopsfixture.Options{UnencryptedRegex: "^(user|name|port)$"}, true},
		{"encrypted_comment_regex", sopsfixture.Options{EncryptedCommentRegex: "sops:enc"}, false},
		{"unencrypted_comment_regex", sopsfixture.Options{UnencryptedCommentRegex: "sops:plain"}, true},
		{"mac_only_encrypted", sopsfixture.Options{MACOnlyEncrypted: true}, true},
		{"mac_only_encrypted with encrypted_regex", sopsfixture.Options{
			EncryptedRegex: "^(password|token)$", MACOnlyEncrypted: true}, false},
	}
	for _, f := range allFormats {
		for _, rule := range rules {
			t.Run(string(f)+"/"+rule.name, func(t *testing.T) {
				g := NewWithT(t)
				opts := rule.opts
				opts.KeyGroups = one
				enc, err := sopsfixture.Encrypt(richPlain(f), sopsfixture.Format(f), opts)
				g.Expect(err).ToNot(HaveOccurred())
				if rule.hidden && rule.opts.UnencryptedCommentRegex == "" {
					g.Expect(string(enc)).ToNot(ContainSubstring("s3cr3t"))
				}

				out, err := d.DecryptFile(writeFile(t, t.TempDir(), "doc", enc), f)
				g.Expect(err).ToNot(HaveOccurred())
				g.Expect(string(out)).ToNot(ContainSubstring("ENC["), "every value and comment is decrypted")

				want, err := sopsfixture.DecryptWithSOPS(enc, sopsfixture.Format(f), key)
				g.Expect(err).ToNot(HaveOccurred())
				expectSameAsSOPS(g, f, out, want)
				expectRichPlaintext(g, f, out)
			})
		}
	}
}

// expectSameAsSOPS compares the output with SOPS' own decryption: byte for
// byte, but for YAML, where this package keeps comments where they were
// while SOPS moves some, and keeps the original style of unencrypted
// values.
func expectSameAsSOPS(g *WithT, f Format, got, want []byte) {
	if f != FormatYAML {
		g.Expect(string(got)).To(Equal(string(want)))
		return
	}
	var o, w any
	g.Expect(sigsyaml.Unmarshal(got, &o)).To(Succeed())
	g.Expect(sigsyaml.Unmarshal(want, &w)).To(Succeed())
	g.Expect(o).To(Equal(w))
}

// expectRichPlaintext compares the output with the plain document.
func expectRichPlaintext(g *WithT, f Format, got []byte) {
	plain := richPlain(f)
	switch f {
	case FormatYAML:
		var o, w any
		g.Expect(yaml.Unmarshal(got, &o)).To(Succeed())
		g.Expect(yaml.Unmarshal(plain, &w)).To(Succeed())
		g.Expect(o).To(Equal(w))
		g.Expect(yamlKeyOrder(g, got)).To(Equal(yamlKeyOrder(g, plain)))
		for _, line := range strings.Split(string(plain), "\n") {
			if _, comment, ok := strings.Cut(line, "#"); ok {
				g.Expect(string(got)).To(ContainSubstring("#"+comment), "comments are kept")
			}
		}
	case FormatJSON:
		var o, w any
		g.Expect(sigsyaml.Unmarshal(got, &o)).To(Succeed())
		g.Expect(sigsyaml.Unmarshal(plain, &w)).To(Succeed())
		g.Expect(o).To(Equal(w))
	case FormatINI:
		gotINI, err := ini.Load(got)
		g.Expect(err).ToNot(HaveOccurred())
		wantINI, err := ini.Load(plain)
		g.Expect(err).ToNot(HaveOccurred())
		g.Expect(gotINI.SectionStrings()).To(Equal(wantINI.SectionStrings()))
		for _, s := range wantINI.Sections() {
			g.Expect(gotINI.Section(s.Name()).KeysHash()).To(Equal(s.KeysHash()))
		}
		g.Expect(string(got)).To(ContainSubstring("sops:enc"))
	default:
		g.Expect(string(got)).To(Equal(string(plain)))
	}
}

// yamlKeyOrder lists the key paths of a YAML document in document order.
func yamlKeyOrder(g *WithT, doc []byte) []string {
	var n yaml.Node
	g.Expect(yaml.Unmarshal(doc, &n)).To(Succeed())
	var keys []string
	var visit func(n *yaml.Node, prefix string)
	visit = func(n *yaml.Node, prefix string) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := prefix + "/" + n.Content[i].Value
				keys = append(keys, k)
				visit(n.Content[i+1], k)
			}
			return
		}
		for _, c := range n.Content {
			visit(c, prefix)
		}
	}
	visit(&n, "")
	return keys
}

// TestDecryptFile_KeyGroups decrypts every format with the data key split
// between an age and a PGP key group, which dotenv and INI store flattened.
func TestDecryptFile_KeyGroups(t *testing.T) {
	ageKey, err := sopsfixture.NewAgeKey()
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	pgpKey, err := sopsfixture.NewPGPKey()
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	pgpEntry, err := pgpKey.SecretEntry()
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	other, err := sopsfixture.NewAgeKey()
	NewWithT(t).Expect(err).ToNot(HaveOccurred())

	both := newTestDecryptor(t, map[string][]byte{"a.agekey": ageKey.SecretEntry(), "p.asc": pgpEntry})
	ageOnly := newTestDecryptor(t, map[string][]byte{"a.agekey": ageKey.SecretEntry()})
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			g := NewWithT(t)
			enc, err := sopsfixture.Encrypt(richPlain(f), sopsfixture.Format(f), sopsfixture.Options{
				KeyGroups: [][]sopsfixture.Recipient{{ageKey}, {pgpKey}, {other}}, ShamirThreshold: 2,
			})
			g.Expect(err).ToNot(HaveOccurred())
			path := writeFile(t, t.TempDir(), "doc", enc)

			out, err := both.DecryptFile(path, f)
			g.Expect(err).ToNot(HaveOccurred())
			expectRichPlaintext(g, f, out)

			_, err = ageOnly.DecryptFile(path, f)
			g.Expect(err).To(MatchError(ErrNoMatchingKey))
			g.Expect(err.Error()).To(ContainSubstring("recovered 1 of the 2 Shamir key groups required"))
			expectNoSecrets(g, err)
		})
	}
}

// tamperCase describes, per format, how to find the lines of the values a
// and b and of the MAC in an encrypted document.
type tamperCase struct {
	plain    string
	a, b     string // regular expressions of the lines of a and b
	mac      string
	pathOfA  string
	reorders bool
}

var tamperCases = map[Format]tamperCase{
	FormatYAML: {
		plain: "a: s3cr3t-a\nb: s3cr3t-b\nc: s3cr3t-c\nn_unencrypted: visible\n",
		a:     `^a: ENC`, b: `^b: ENC`, mac: `^\s+mac: ENC`, pathOfA: "a", reorders: true,
	},
	FormatJSON: {
		plain: `{"a": "s3cr3t-a", "b": "s3cr3t-b", "c": "s3cr3t-c", "n_unencrypted": "visible"}`,
		a:     `^\t"a": "ENC`, b: `^\t"b": "ENC`, mac: `^\t\t"mac": "ENC`, pathOfA: "a", reorders: true,
	},
	FormatDotenv: {
		plain: "a=s3cr3t-a\nb=s3cr3t-b\nc=s3cr3t-c\nn_unencrypted=visible\n",
		a:     `^a=ENC`, b: `^b=ENC`, mac: `^sops_mac=ENC`, pathOfA: "a", reorders: true,
	},
	FormatINI: {
		plain: "[s]\na = s3cr3t-a\nb = s3cr3t-b\nc = s3cr3t-c\nn_unencrypted = visible\n",
		a:     `^a\s*=\s*ENC`, b: `^b\s*=\s*ENC`, mac: `^mac\s*=\s*ENC`, pathOfA: "s:a", reorders: true,
	},
	FormatBinary: {
		plain: "s3cr3t-a\n",
		a:     `^\t"data": "ENC`, b: `^\t"data": "ENC`, mac: `^\t\t"mac": "ENC`, pathOfA: "data",
	},
}

// TestDecryptFile_Tampered changes documents encrypted by SOPS in every
// format and expects each change to be caught with the right error.
func TestDecryptFile_Tampered(t *testing.T) {
	key, err := sopsfixture.NewAgeKey()
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.SecretEntry()})

	for _, f := range allFormats {
		tc := tamperCases[f]
		enc, err := sopsfixture.Encrypt([]byte(tc.plain), sopsfixture.Format(f),
			sopsfixture.Options{KeyGroups: [][]sopsfixture.Recipient{{key}}})
		NewWithT(t).Expect(err).ToNot(HaveOccurred())
		corruptData := func(l string) string { return strings.Replace(l, "data:", "data:AAAA", 1) }

		tests := []struct {
			name   string
			tamper func([]byte) []byte
			want   error
			detail string
		}{
			{
				name:   "tampered value",
				tamper: func(b []byte) []byte { return replaceLine(t, b, tc.a, corruptData) },
				want:   ErrValueDecryption, detail: `"` + tc.pathOfA + `": authentication failed`,
			},
			{
				name:   "tampered MAC",
				tamper: func(b []byte) []byte { return replaceLine(t, b, tc.mac, corruptData) },
				want:   ErrMACMismatch, detail: "stored MAC cannot be decrypted",
			},
			{
				name:   "removed key",
				tamper: func(b []byte) []byte { return replaceLine(t, b, tc.b, func(string) string { return "" }) },
				want:   ErrMACMismatch, detail: "changed after it was encrypted",
			},
		}
		if tc.reorders {
			tests = append(tests, struct {
				name   string
				tamper func([]byte) []byte
				want   error
				detail string
			}{
				name:   "reordered keys",
				tamper: func(b []byte) []byte { return swapLines(t, b, tc.a, tc.b) },
				want:   ErrMACMismatch, detail: "changed after it was encrypted",
			}, struct {
				name   string
				tamper func([]byte) []byte
				want   error
				detail string
			}{
				name:   "changed unencrypted value",
				tamper: func(b []byte) []byte { return bytes.Replace(b, []byte("visible"), []byte("changed"), 1) },
				want:   ErrMACMismatch, detail: "changed after it was encrypted",
			})
		}
		for _, tt := range tests {
			t.Run(string(f)+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				// The untouched document decrypts.
				_, err := d.DecryptFile(writeFile(t, t.TempDir(), "doc", enc), f)
				g.Expect(err).ToNot(HaveOccurred())

				out, err := d.DecryptFile(writeFile(t, t.TempDir(), "doc", tt.tamper(bytes.Clone(enc))), f)
				g.Expect(out).To(BeNil())
				g.Expect(err).To(MatchError(tt.want))
				g.Expect(err.Error()).To(ContainSubstring(tt.detail))
				expectNoSecrets(g, err)
			})
		}
	}
}

// swapLines swaps the first lines that match reA and reB.
func swapLines(t *testing.T, doc []byte, reA, reB string) []byte {
	t.Helper()
	var a, b string
	replaceLine(t, doc, reA, func(l string) string { a = l; return l })
	replaceLine(t, doc, reB, func(l string) string { b = l; return l })
	doc = replaceLine(t, doc, reA, func(string) string { return "\x00swap" })
	doc = replaceLine(t, doc, reB, func(string) string { return a })
	return bytes.Replace(doc, []byte("\x00swap"), []byte(b), 1)
}

// TestDecryptFile_YAMLStream decrypts a stream of YAML documents, whose
// metadata is in the first document only.
func TestDecryptFile_YAMLStream(t *testing.T) {
	g := NewWithT(t)
	key, err := sopsfixture.NewAgeKey()
	g.Expect(err).ToNot(HaveOccurred())
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.SecretEntry()})
	plain := "a: s3cr3t-1 # one\n---\n# second\nb:\n    - s3cr3t-2\n---\n{}\n"
	enc, err := sopsfixture.Encrypt([]byte(plain), sopsfixture.FormatYAML,
		sopsfixture.Options{KeyGroups: [][]sopsfixture.Recipient{{key}}})
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(strings.Count(string(enc), "sops:")).To(Equal(3), "SOPS writes the metadata into every document")

	out, err := d.DecryptFile(writeFile(t, t.TempDir(), "s.yaml", enc), FormatYAML)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(out)).To(Equal("a: s3cr3t-1 # one\n---\n# second\nb:\n    - s3cr3t-2\n---\n{}\n"))
	want, err := sopsfixture.DecryptWithSOPS(enc, sopsfixture.FormatYAML, key)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(strings.Count(string(want), "---")).To(Equal(2))

	// The MAC spans the documents: dropping one is caught.
	second := strings.Index(string(enc), "\n---\n")
	_, err = d.DecryptFile(writeFile(t, t.TempDir(), "s.yaml", enc[:second]), FormatYAML)
	g.Expect(err).To(MatchError(ErrMACMismatch))
}
