package sops

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// Plain documents for each format. Every secret value contains "s3cr3t" so
// that tests can assert no plaintext leaks into an error.
var (
	plainYAML = []byte(`database:
    user: admin
    password: s3cr3t-yaml-pa55
port: 5432
enabled: true
ratio: 0.5
hosts:
    - s3cr3t-host-a
    - s3cr3t-host-b
note_unencrypted: visible
`)
	plainJSON   = []byte(`{"token": "s3cr3t-json-t0ken", "nested": {"n": 1, "b": false}, "list": ["s3cr3t-a", "s3cr3t-b"]}`)
	plainDotenv = []byte("USER=admin\nPASSWORD=s3cr3t-env-pa55\n")
	plainINI    = []byte("[db]\nuser = admin\npassword = s3cr3t-ini-pa55\n")
	plainBinary = []byte("-----BEGIN s3cr3t BLOB-----\nline two\n\tindented line\n")
)

// plainFor returns the test document of a format.
func plainFor(f Format) []byte {
	switch f {
	case FormatYAML:
		return plainYAML
	case FormatJSON:
		return plainJSON
	case FormatDotenv:
		return plainDotenv
	case FormatINI:
		return plainINI
	default:
		return plainBinary
	}
}

// expectSamePlaintext compares a decrypted document with the original,
// semantically for YAML and JSON (the stores re-indent them).
func expectSamePlaintext(g *WithT, f Format, got []byte) {
	want := plainFor(f)
	switch f {
	case FormatYAML, FormatJSON:
		var w, o any
		g.Expect(yaml.Unmarshal(want, &w)).To(Succeed())
		g.Expect(yaml.Unmarshal(got, &o)).To(Succeed())
		g.Expect(o).To(Equal(w))
	case FormatINI:
		for _, line := range []string{"[db]", "user", "admin", "password", "s3cr3t-ini-pa55"} {
			g.Expect(string(got)).To(ContainSubstring(line))
		}
		g.Expect(string(got)).ToNot(ContainSubstring("sops"))
	default:
		g.Expect(string(got)).To(Equal(string(want)))
	}
}

// expectNoSecrets asserts that an error message carries no plaintext value
// and no key material.
func expectNoSecrets(g *WithT, err error, extra ...string) {
	g.Expect(err).To(HaveOccurred())
	msg := err.Error()
	g.Expect(msg).ToNot(ContainSubstring("s3cr3t"))
	g.Expect(msg).ToNot(ContainSubstring("AGE-SECRET-KEY"))
	g.Expect(msg).ToNot(ContainSubstring("PRIVATE KEY"))
	g.Expect(msg).ToNot(ContainSubstring("ENC[AES256_GCM"))
	for _, s := range extra {
		g.Expect(msg).ToNot(ContainSubstring(s))
	}
}

var allFormats = []Format{FormatYAML, FormatJSON, FormatDotenv, FormatINI, FormatBinary}

func TestFormatForPath(t *testing.T) {
	tests := map[string]Format{
		"a.yaml": FormatYAML, "a.YML": FormatYAML, "dir.d/a.Yaml": FormatYAML,
		"a.json": FormatJSON, "a.JSON": FormatJSON,
		"a.env": FormatDotenv, ".ENV": FormatDotenv,
		"a.ini": FormatINI, "a.INI": FormatINI,
		"a.crt": FormatBinary, "noext": FormatBinary, "a.yaml.txt": FormatBinary,
	}
	for path, want := range tests {
		t.Run(path, func(t *testing.T) {
			NewWithT(t).Expect(FormatForPath(path)).To(Equal(want))
		})
	}
}

func TestNewDecryptor(t *testing.T) {
	ageA := newAgeKey(t)
	ageB := newAgeKey(t)
	pgpA := newPGPKey(t)

	locked := newPGPKey(t)
	NewWithT(t).Expect(locked.entity.EncryptPrivateKeys([]byte("passphrase"), nil)).To(Succeed())
	var lockedArmor bytes.Buffer
	w, _ := pgparmor.Encode(&lockedArmor, openpgp.PrivateKeyType, nil)
	NewWithT(t).Expect(locked.entity.SerializePrivateWithoutSigning(w, nil)).To(Succeed())
	_ = w.Close()

	var publicOnly bytes.Buffer
	w, _ = pgparmor.Encode(&publicOnly, openpgp.PublicKeyType, nil)
	NewWithT(t).Expect(pgpA.entity.Serialize(w)).To(Succeed())
	_ = w.Close()

	tests := []struct {
		name    string
		entries map[string][]byte
		wantAge int
		wantPGP int
		wantErr string
	}{
		{name: "no entries"},
		{
			name: "age identities with comments, blank lines and CRLF",
			entries: map[string][]byte{"keys.agekey": []byte(
				"# comment\r\n\r\n" + ageA.id.String() + "\r\n  " + ageB.id.String() + "  \n")},
			wantAge: 2,
		},
		{
			name: "upper-case suffixes",
			entries: map[string][]byte{
				"IDENTITY.AGEKEY": ageA.secret(),
				"PRIVATE.ASC":     pgpA.secret(t),
			},
			wantAge: 1, wantPGP: 1,
		},
		{
			name: "other entries are ignored",
			entries: map[string][]byte{
				"sops.vault-token": []byte("hvs.s3cr3t"),
				"sops.aws-kms":     []byte("garbage"),
				"README":           []byte("not a key"),
				"age.agekey.bak":   []byte("not a key"),
			},
		},
		{
			name:    "public-only PGP keys are skipped",
			entries: map[string][]byte{"pub.asc": publicOnly.Bytes()},
		},
		{
			name:    "invalid age identity names the entry and line, not the content",
			entries: map[string][]byte{"bad.agekey": []byte("# ok\nAGE-SECRET-KEY-1S3CR3TNOTVALID\n")},
			wantErr: `"bad.agekey": line 2: not a valid age identity`,
		},
		{
			name:    "age plugin identities are refused",
			entries: map[string][]byte{"plugin.agekey": []byte("AGE-PLUGIN-YUBIKEY-1QQQ\n")},
			wantErr: "plugin identities are not supported",
		},
		{
			name:    "empty age entry",
			entries: map[string][]byte{"empty.agekey": []byte("# nothing\n")},
			wantErr: "no age identity found",
		},
		{
			name:    "invalid PGP key",
			entries: map[string][]byte{"bad.asc": []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\ns3cr3t\n")},
			wantErr: `"bad.asc": not a valid armored OpenPGP key ring`,
		},
		{
			name:    "passphrase-protected PGP key",
			entries: map[string][]byte{"locked.asc": lockedArmor.Bytes()},
			wantErr: "passphrase-protected",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d, err := NewDecryptor(tt.entries)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				expectNoSecrets(g, err, "S3CR3T")
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			g.Expect(d.keys.age).To(HaveLen(tt.wantAge))
			g.Expect(d.keys.pgp).To(HaveLen(tt.wantPGP))
		})
	}
}

func TestDecryptFile_Formats(t *testing.T) {
	ageKey := newAgeKey(t)
	pgpKey := newPGPKey(t)

	for _, f := range allFormats {
		for _, kind := range []string{"age", "pgp"} {
			t.Run(string(f)+"/"+kind, func(t *testing.T) {
				g := NewWithT(t)
				var opts encryptOptions
				var entries map[string][]byte
				if kind == "age" {
					opts.groups = group(ageKey.masterKey(t))
					entries = map[string][]byte{"age.agekey": ageKey.secret()}
				} else {
					opts.groups = group(pgpKey.masterKey())
					entries = map[string][]byte{"pgp.asc": pgpKey.secret(t)}
				}
				enc := encrypt(t, plainFor(f), f, opts)
				g.Expect(string(enc)).ToNot(ContainSubstring("s3cr3t"))

				path := writeFile(t, t.TempDir(), "doc", enc)
				out, err := newTestDecryptor(t, entries).DecryptFile(path, f)
				g.Expect(err).ToNot(HaveOccurred())
				expectSamePlaintext(g, f, out)
			})
		}
	}
}

func TestDecryptFile_Recipients(t *testing.T) {
	ageA, ageB, ageOther := newAgeKey(t), newAgeKey(t), newAgeKey(t)
	pgpA, pgpOther := newPGPKey(t), newPGPKey(t)

	oneGroup := encrypt(t, plainYAML, FormatYAML, encryptOptions{
		groups: group(ageA.masterKey(t), ageB.masterKey(t), pgpA.masterKey()),
	})
	shamir2of2 := encrypt(t, plainYAML, FormatYAML, encryptOptions{
		groups: append(group(ageA.masterKey(t)), group(pgpA.masterKey())...),
	})
	shamir2of3 := encrypt(t, plainYAML, FormatYAML, encryptOptions{
		groups:    append(append(group(ageA.masterKey(t)), group(pgpA.masterKey())...), group(ageB.masterKey(t))...),
		threshold: 2,
	})

	tests := []struct {
		name    string
		doc     []byte
		entries map[string][]byte
		wantErr []string
	}{
		{name: "first age recipient", doc: oneGroup, entries: map[string][]byte{"a.agekey": ageA.secret()}},
		{name: "second age recipient", doc: oneGroup, entries: map[string][]byte{"b.agekey": ageB.secret()}},
		{name: "PGP recipient", doc: oneGroup, entries: map[string][]byte{"a.asc": pgpA.secret(t)}},
		{
			name: "one entry with several identities, only the last matches", doc: oneGroup,
			entries: map[string][]byte{"all.agekey": append(ageOther.secret(), ageB.secret()...)},
		},
		{
			name: "no matching key of either kind", doc: oneGroup,
			entries: map[string][]byte{"o.agekey": ageOther.secret(), "o.asc": pgpOther.secret(t)},
			wantErr: []string{"no age identity (.agekey entry) matches recipient(s) " + ageA.recipient() + ", " + ageB.recipient(),
				"no OpenPGP private key (.asc entry) matches fingerprint(s) " + pgpA.fingerprint()},
		},
		{
			name: "Shamir 2 of 2 with both keys", doc: shamir2of2,
			entries: map[string][]byte{"a.agekey": ageA.secret(), "a.asc": pgpA.secret(t)},
		},
		{
			name: "Shamir 2 of 2 with the age key only", doc: shamir2of2,
			entries: map[string][]byte{"a.agekey": ageA.secret()},
			wantErr: []string{"recovered 1 of the 2 Shamir key groups required",
				"no OpenPGP private key (.asc entry) matches fingerprint(s) " + pgpA.fingerprint()},
		},
		{
			name: "Shamir 2 of 3 with the PGP key and the second age key", doc: shamir2of3,
			entries: map[string][]byte{"a.asc": pgpA.secret(t), "b.agekey": ageB.secret()},
		},
		{
			name: "Shamir 2 of 3 with the PGP key only", doc: shamir2of3,
			entries: map[string][]byte{"a.asc": pgpA.secret(t)},
			wantErr: []string{"recovered 1 of the 2 Shamir key groups required", ageA.recipient(), ageB.recipient()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			path := writeFile(t, t.TempDir(), "secret.yaml", tt.doc)
			out, err := newTestDecryptor(t, tt.entries).DecryptFile(path, FormatYAML)
			if len(tt.wantErr) > 0 {
				g.Expect(err).To(MatchError(ErrNoMatchingKey))
				for _, s := range tt.wantErr {
					g.Expect(err.Error()).To(ContainSubstring(s))
				}
				expectNoSecrets(g, err)
				return
			}
			g.Expect(err).ToNot(HaveOccurred())
			expectSamePlaintext(g, FormatYAML, out)
		})
	}
}

func TestDecryptFile_WrongKey(t *testing.T) {
	ageA, ageB := newAgeKey(t), newAgeKey(t)
	pgpA, pgpB := newPGPKey(t), newPGPKey(t)
	ageDoc := encrypt(t, plainYAML, FormatYAML, encryptOptions{groups: group(ageA.masterKey(t))})
	pgpDoc := encrypt(t, plainDotenv, FormatDotenv, encryptOptions{groups: group(pgpA.masterKey())})

	tests := []struct {
		name    string
		doc     []byte
		format  Format
		entries map[string][]byte
		want    string
	}{
		{"age document, other age identity", ageDoc, FormatYAML,
			map[string][]byte{"b.agekey": ageB.secret()},
			"no age identity (.agekey entry) matches recipient(s) " + ageA.recipient()},
		{"age document, only a PGP key", ageDoc, FormatYAML,
			map[string][]byte{"a.asc": pgpA.secret(t)},
			"no age identity (.agekey entry) matches recipient(s) " + ageA.recipient()},
		{"age document, empty Secret", ageDoc, FormatYAML, nil,
			"no age identity (.agekey entry)"},
		{"PGP document, other PGP key", pgpDoc, FormatDotenv,
			map[string][]byte{"b.asc": pgpB.secret(t)},
			"no OpenPGP private key (.asc entry) matches fingerprint(s) " + pgpA.fingerprint()},
		{"PGP document, only an age key", pgpDoc, FormatDotenv,
			map[string][]byte{"a.agekey": ageA.secret()},
			"no OpenPGP private key (.asc entry)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			path := writeFile(t, t.TempDir(), "doc", tt.doc)
			_, err := newTestDecryptor(t, tt.entries).DecryptFile(path, tt.format)
			g.Expect(err).To(MatchError(ErrNoMatchingKey))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			expectNoSecrets(g, err, ageB.id.String())
		})
	}
}

// replaceLine rewrites the first line of doc that matches re.
func replaceLine(t *testing.T, doc []byte, re string, repl func(string) string) []byte {
	t.Helper()
	lines := strings.Split(string(doc), "\n")
	rx := regexp.MustCompile(re)
	for i, l := range lines {
		if rx.MatchString(l) {
			lines[i] = repl(l)
			return []byte(strings.Join(lines, "\n"))
		}
	}
	t.Fatalf("no line matches %q", re)
	return nil
}

func TestDecryptFile_Integrity(t *testing.T) {
	key := newAgeKey(t)
	doc := encrypt(t, plainYAML, FormatYAML, encryptOptions{groups: group(key.masterKey(t))})
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.secret()})

	tests := []struct {
		name   string
		tamper func([]byte) []byte
		want   error
		detail string
	}{
		{
			name: "altered ciphertext",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^\s+password: ENC`, func(l string) string {
					return strings.Replace(l, "data:", "data:AAAA", 1)
				})
			},
			want: ErrValueDecryption, detail: `"database:password": authentication failed`,
		},
		{
			// security.md row 18: the type tag is outside the GCM tag, so the
			// value decrypts and SOPS' own error would quote the plaintext.
			name: "type tag changed from str to int",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^\s+password: ENC`, func(l string) string {
					return strings.Replace(l, "type:str]", "type:int]", 1)
				})
			},
			want: ErrValueDecryption, detail: "does not match its declared type",
		},
		{
			name: "type tag changed from str to float in a list",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^\s+- ENC`, func(l string) string {
					return strings.Replace(l, "type:str]", "type:float]", 1)
				})
			},
			want: ErrValueDecryption, detail: `"hosts": the decrypted value does not match`,
		},
		{
			// A value turned into a comment drops out of the MAC.
			name: "type tag changed from str to comment",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^\s+password: ENC`, func(l string) string {
					return strings.Replace(l, "type:str]", "type:comment]", 1)
				})
			},
			want: ErrMACMismatch, detail: "changed after it was encrypted",
		},
		{
			name: "value replaced by plaintext",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^\s+password: ENC`, func(string) string {
					return "    password: s3cr3t-injected"
				})
			},
			want: ErrValueDecryption, detail: "not a SOPS-encrypted value",
		},
		{
			name: "unencrypted value changed",
			tamper: func(b []byte) []byte {
				return bytes.Replace(b, []byte("note_unencrypted: visible"), []byte("note_unencrypted: changed"), 1)
			},
			want: ErrMACMismatch,
		},
		{
			name: "value removed",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^enabled: ENC`, func(string) string { return "" })
			},
			want: ErrMACMismatch,
		},
		{
			name: "MAC corrupted",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^\s+mac: ENC`, func(l string) string {
					return strings.Replace(l, "data:", "data:AAAA", 1)
				})
			},
			want: ErrMACMismatch, detail: "stored MAC cannot be decrypted",
		},
		{
			name: "MAC removed",
			tamper: func(b []byte) []byte {
				return replaceLine(t, b, `^\s+mac: ENC`, func(string) string { return "    mac: \"\"" })
			},
			want: ErrMACMismatch, detail: "no valid MAC",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			path := writeFile(t, t.TempDir(), "secret.yaml", tt.tamper(bytes.Clone(doc)))
			out, err := d.DecryptFile(path, FormatYAML)
			t.Log(err)
			g.Expect(out).To(BeNil())
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(err.Error()).To(ContainSubstring(tt.detail))
			expectNoSecrets(g, err, "admin", "5432")
		})
	}
}

func TestDecryptFile_MetadataOptions(t *testing.T) {
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.secret()})
	tests := []struct {
		name string
		opts encryptOptions
	}{
		{"encrypted_regex", encryptOptions{encryptedRegex: "^(password|hosts)$"}},
		{"mac_only_encrypted", encryptOptions{macOnlyEncrypted: true}},
		{"encrypted_regex with mac_only_encrypted", encryptOptions{encryptedRegex: "^password$", macOnlyEncrypted: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.opts.groups = group(key.masterKey(t))
			path := writeFile(t, t.TempDir(), "s.yaml", encrypt(t, plainYAML, FormatYAML, tt.opts))
			out, err := d.DecryptFile(path, FormatYAML)
			g.Expect(err).ToNot(HaveOccurred())
			expectSamePlaintext(g, FormatYAML, out)
		})
	}
}

func TestDecryptFile_Refused(t *testing.T) {
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.secret()})
	dir := t.TempDir()
	enc := encrypt(t, plainJSON, FormatJSON, encryptOptions{groups: group(key.masterKey(t))})
	target := writeFile(t, dir, "real.json", enc)
	link := filepath.Join(dir, "link.json")
	NewWithT(t).Expect(os.Symlink(target, link)).To(Succeed())

	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	NewWithT(t).Expect(err).ToNot(HaveOccurred())
	NewWithT(t).Expect(f.Truncate(MaxEncryptedFileSize + 1)).To(Succeed())
	NewWithT(t).Expect(f.Close()).To(Succeed())
	atLimit := writeFile(t, dir, "limit.json", append(enc, bytes.Repeat([]byte(" "), int(MaxEncryptedFileSize)-len(enc))...))

	tests := []struct {
		name   string
		path   string
		format Format
		want   error
	}{
		{"symlink", link, FormatJSON, ErrIrregularFile},
		{"directory", dir, FormatJSON, ErrIrregularFile},
		{"larger than 5 MiB", big, FormatJSON, ErrFileTooLarge},
		{"not encrypted", writeFile(t, dir, "plain.json", plainJSON), FormatJSON, ErrNotEncrypted},
		{"wrong format", target, FormatINI, nil},
		{"exactly 5 MiB", atLimit, FormatJSON, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := d.DecryptFile(tt.path, tt.format)
			switch {
			case tt.name == "exactly 5 MiB":
				g.Expect(err).ToNot(HaveOccurred())
				var got, want any
				g.Expect(json.Unmarshal(out, &got)).To(Succeed())
				g.Expect(json.Unmarshal(plainJSON, &want)).To(Succeed())
				g.Expect(got).To(Equal(want))
			case tt.want == nil:
				g.Expect(err).To(HaveOccurred())
				expectNoSecrets(g, err)
			default:
				g.Expect(err).To(MatchError(tt.want))
			}
		})
	}
}

// TestDecrypt_Malformed feeds malformed documents that must give an error
// without quoting their content.
func TestDecrypt_Malformed(t *testing.T) {
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"k.agekey": key.secret()})
	tests := map[string]struct {
		doc    string
		format Format
		want   error
	}{
		"no sops key":         {`{"a": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]"}`, FormatJSON, ErrNotEncrypted},
		"sops is not a map":   {`{"a": "b", "sops": "s3cr3t"}`, FormatJSON, nil},
		"no master keys":      {`{"a": "b", "sops": {"mac": "", "lastmodified": "2024-01-01T00:00:00Z", "version": "3.9.0"}}`, FormatJSON, nil},
		"invalid JSON":        {`{"a": "s3cr3t`, FormatJSON, nil},
		"invalid dotenv line": {"s3cr3t-line-without-equals\nsops_version=3.9.0\n", FormatDotenv, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := d.decrypt([]byte(tt.doc), tt.format, true)
			if tt.want != nil {
				g.Expect(err).To(MatchError(tt.want))
				return
			}
			expectNoSecrets(g, err)
		})
	}
}
