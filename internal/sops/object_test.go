package sops

import (
	"encoding/base64"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// secretManifest is written by hand, in the usual non-alphabetical order, so
// that the object's key order differs from the file's.
var secretManifest = []byte(`apiVersion: v1
kind: Secret
metadata:
    name: app
    namespace: apps
type: Opaque
stringData:
    username: admin
    password: s3cr3t-string-data
data:
    token: ` + base64.StdEncoding.EncodeToString([]byte("s3cr3t-data-token")) + `
`)

// toObject parses a manifest as kustomize would hand it over.
func toObject(t *testing.T, manifest []byte) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	NewWithT(t).Expect(yaml.Unmarshal(manifest, &obj.Object)).To(Succeed())
	return obj
}

// encryptSecret encrypts a manifest like
// `sops --encrypt --encrypted-regex '^(data|stringData)$'`.
func encryptSecret(t *testing.T, manifest []byte, opts encryptOptions) *unstructured.Unstructured {
	t.Helper()
	opts.encryptedRegex = "^(data|stringData)$"
	return toObject(t, encrypt(t, manifest, FormatYAML, opts))
}

func expectDecryptedSecret(g *WithT, obj *unstructured.Unstructured) {
	g.Expect(obj.Object).ToNot(HaveKey("sops"))
	g.Expect(obj.GetName()).To(Equal("app"))
	sd, _, _ := unstructured.NestedStringMap(obj.Object, "stringData")
	g.Expect(sd).To(Equal(map[string]string{"username": "admin", "password": "s3cr3t-string-data"}))
	token, _, _ := unstructured.NestedString(obj.Object, "data", "token")
	raw, err := base64.StdEncoding.DecodeString(token)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(string(raw)).To(Equal("s3cr3t-data-token"))
}

func TestDecryptObject(t *testing.T) {
	ageA, ageB := newAgeKey(t), newAgeKey(t)
	pgpA := newPGPKey(t)
	ageEntries := map[string][]byte{"a.agekey": ageA.secret()}

	tests := []struct {
		name    string
		obj     func(t *testing.T) *unstructured.Unstructured
		entries map[string][]byte
		check   func(g *WithT, obj *unstructured.Unstructured)
	}{
		{
			name: "age",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return encryptSecret(t, secretManifest, encryptOptions{groups: group(ageA.masterKey(t))})
			},
			entries: ageEntries,
			check:   expectDecryptedSecret,
		},
		{
			name: "PGP, upper-case suffix",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return encryptSecret(t, secretManifest, encryptOptions{groups: group(pgpA.masterKey())})
			},
			entries: map[string][]byte{"KEY.ASC": pgpA.secret(t)},
			check:   expectDecryptedSecret,
		},
		{
			name: "several recipients, second age identity, upper-case suffix",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return encryptSecret(t, secretManifest, encryptOptions{
					groups: group(ageA.masterKey(t), pgpA.masterKey(), ageB.masterKey(t)),
				})
			},
			entries: map[string][]byte{"B.AgeKey": ageB.secret()},
			check:   expectDecryptedSecret,
		},
		{
			// kustomize injects and rewrites unencrypted fields after
			// encryption; the values stay authenticated on their own.
			name: "fields changed by kustomize",
			obj: func(t *testing.T) *unstructured.Unstructured {
				obj := encryptSecret(t, secretManifest, encryptOptions{groups: group(ageA.masterKey(t))})
				obj.SetNamespace("overridden")
				obj.SetLabels(map[string]string{"app.kubernetes.io/part-of": "shop"})
				obj.SetName("app")
				return obj
			},
			entries: ageEntries,
			check: func(g *WithT, obj *unstructured.Unstructured) {
				expectDecryptedSecret(g, obj)
				g.Expect(obj.GetNamespace()).To(Equal("overridden"))
				g.Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/part-of", "shop"))
			},
		},
		{
			name: "not encrypted Secret is untouched",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return toObject(t, secretManifest)
			},
			entries: ageEntries,
			check: func(g *WithT, obj *unstructured.Unstructured) {
				g.Expect(obj.Object).To(Equal(toObject(t, secretManifest).Object))
			},
		},
		{
			name: "other kinds are untouched, even with a sops key",
			obj: func(t *testing.T) *unstructured.Unstructured {
				obj := encryptSecret(t, secretManifest, encryptOptions{groups: group(ageA.masterKey(t))})
				obj.SetKind("ConfigMap")
				return obj
			},
			entries: ageEntries,
			check: func(g *WithT, obj *unstructured.Unstructured) {
				g.Expect(obj.Object).To(HaveKey("sops"))
				pw, _, _ := unstructured.NestedString(obj.Object, "stringData", "password")
				g.Expect(pw).To(HavePrefix("ENC[AES256_GCM,"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := tt.obj(t)
			g.Expect(newTestDecryptor(t, tt.entries).DecryptObject(obj)).To(Succeed())
			tt.check(g, obj)
		})
	}
}

func TestDecryptObject_OptOut(t *testing.T) {
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"a.agekey": key.secret()})
	for _, value := range []string{"Disabled", "disabled", "DISABLED"} {
		t.Run(value, func(t *testing.T) {
			g := NewWithT(t)
			obj := encryptSecret(t, secretManifest, encryptOptions{groups: group(key.masterKey(t))})
			obj.SetAnnotations(map[string]string{DecryptAnnotation: value})
			before := obj.DeepCopy()
			g.Expect(IsDecryptionDisabled(obj)).To(BeTrue())
			g.Expect(d.DecryptObject(obj)).To(Succeed())
			g.Expect(obj.Object).To(Equal(before.Object))
		})
	}
	t.Run("other values do not opt out", func(t *testing.T) {
		g := NewWithT(t)
		obj := encryptSecret(t, secretManifest, encryptOptions{groups: group(key.masterKey(t))})
		obj.SetAnnotations(map[string]string{DecryptAnnotation: "Enabled"})
		g.Expect(d.DecryptObject(obj)).To(Succeed())
		expectDecryptedSecret(g, obj)
	})
}

func TestDecryptObject_Errors(t *testing.T) {
	key, other := newAgeKey(t), newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"a.agekey": key.secret()})

	// tamper rewrites the encrypted stringData.password of an object.
	tamper := func(f func(string) string) func(*unstructured.Unstructured) {
		return func(obj *unstructured.Unstructured) {
			pw, _, _ := unstructured.NestedString(obj.Object, "stringData", "password")
			_ = unstructured.SetNestedField(obj.Object, f(pw), "stringData", "password")
		}
	}
	badBase64 := []byte(strings.Replace(string(secretManifest),
		base64.StdEncoding.EncodeToString([]byte("s3cr3t-data-token")), "s3cr3t not base64!", 1))

	tests := []struct {
		name     string
		manifest []byte
		key      ageKey
		mutate   func(*unstructured.Unstructured)
		want     error
		detail   string
	}{
		{
			name: "wrong key", manifest: secretManifest, key: other,
			want: ErrNoMatchingKey, detail: "Secret 'apps/app': " + ErrNoMatchingKey.Error() +
				": no age identity (.agekey entry) matches recipient(s) " + other.recipient(),
		},
		{
			// security.md row 18.
			name: "type tag changed to int", manifest: secretManifest, key: key,
			mutate: tamper(func(s string) string { return strings.Replace(s, "type:str]", "type:int]", 1) }),
			want:   ErrValueDecryption, detail: `"stringData:password": the decrypted value does not match its declared type`,
		},
		{
			name: "type tag changed to bool", manifest: secretManifest, key: key,
			mutate: tamper(func(s string) string { return strings.Replace(s, "type:str]", "type:bool]", 1) }),
			want:   ErrValueDecryption, detail: "does not match its declared type",
		},
		{
			name: "type tag changed to comment", manifest: secretManifest, key: key,
			mutate: tamper(func(s string) string { return strings.Replace(s, "type:str]", "type:comment]", 1) }),
			detail: "Secret 'apps/app'",
		},
		{
			name: "altered ciphertext", manifest: secretManifest, key: key,
			mutate: tamper(func(s string) string { return strings.Replace(s, "data:", "data:AAAA", 1) }),
			want:   ErrValueDecryption, detail: "authentication failed",
		},
		{
			name: "ciphertext moved to another key", manifest: secretManifest, key: key,
			mutate: func(obj *unstructured.Unstructured) {
				pw, _, _ := unstructured.NestedString(obj.Object, "stringData", "password")
				_ = unstructured.SetNestedField(obj.Object, pw, "stringData", "username")
			},
			want: ErrValueDecryption, detail: `"stringData:username": authentication failed`,
		},
		{
			name: "plaintext injected where a value must be encrypted", manifest: secretManifest, key: key,
			mutate: tamper(func(string) string { return "s3cr3t-injected" }),
			want:   ErrValueDecryption, detail: "not a SOPS-encrypted value",
		},
		{
			name: "decrypted data value is not base64", manifest: badBase64, key: key,
			detail: "decrypted value data.token is not valid base64",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := encryptSecret(t, tt.manifest, encryptOptions{groups: group(tt.key.masterKey(t))})
			if tt.mutate != nil {
				tt.mutate(obj)
			}
			before := obj.DeepCopy()
			err := d.DecryptObject(obj)
			g.Expect(err).To(HaveOccurred())
			t.Log(err)
			if tt.want != nil {
				g.Expect(err).To(MatchError(tt.want))
			}
			g.Expect(err.Error()).To(ContainSubstring(tt.detail))
			expectNoSecrets(g, err, "admin")
			g.Expect(obj.Object).To(Equal(before.Object), "object must be unchanged on error")
		})
	}
}

func TestIsEncryptedSecret(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"nil", nil, false},
		{"encrypted Secret", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "sops": map[string]any{}}}, true},
		{"plain Secret", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret"}}, false},
		{"other group", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Secret", "sops": map[string]any{}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(IsEncryptedSecret(tt.obj)).To(Equal(tt.want))
		})
	}
}

// TestDecryptObject_Concurrent shares one Decryptor between goroutines, as
// the controller does across reconciles; run with -race.
func TestDecryptObject_Concurrent(t *testing.T) {
	ageKey, pgpKey := newAgeKey(t), newPGPKey(t)
	d := newTestDecryptor(t, map[string][]byte{"a.agekey": ageKey.secret(), "p.asc": pgpKey.secret(t)})
	objs := make([]*unstructured.Unstructured, 8)
	for i := range objs {
		mk := ageKey.masterKey(t)
		if i%2 == 1 {
			mk = pgpKey.masterKey()
		}
		objs[i] = encryptSecret(t, secretManifest, encryptOptions{groups: group(mk)})
	}
	errs := make(chan error, len(objs))
	for _, obj := range objs {
		go func() { errs <- d.DecryptObject(obj) }()
	}
	g := NewWithT(t)
	for range objs {
		g.Expect(<-errs).To(Succeed())
	}
	for _, obj := range objs {
		expectDecryptedSecret(g, obj)
	}
}
