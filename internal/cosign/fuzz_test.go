package cosign

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"google.golang.org/protobuf/encoding/protojson"
)

// fuzzDigest is the digest of the artifact the fuzz targets verify
// signatures of.
var fuzzDigest = "sha256:" + strings.Repeat("ab", 32)

// fuzzKey is the fuzz targets' signing key: an ed25519 key from a fixed
// seed, so that a saved failing input verifies the same on every run.
var fuzzKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

// fuzzKeyTrust returns the key mode trust of fuzzKey's public key.
func fuzzKeyTrust(tb testing.TB) *keyTrust {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(fuzzKey.Public())
	if err != nil {
		tb.Fatal(err)
	}
	t, err := compileKeys(map[string][]byte{"cosign.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// fuzzStatement is cosign's in-toto statement of a signature of
// fuzzDigest (or an attestation, with another predicate type).
func fuzzStatement(predicateType string) []byte {
	return fmt.Appendf(nil, `{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":%q}}],"predicateType":%q,"predicate":{}}`,
		strings.TrimPrefix(fuzzDigest, "sha256:"), predicateType)
}

// fuzzKeyBundle returns the v0.3 bundle JSON of statement signed by
// fuzzKey, as cosign sign --key writes it.
func fuzzKeyBundle(tb testing.TB, statement []byte) []byte {
	tb.Helper()
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(inTotoPayloadType), inTotoPayloadType, len(statement), statement)
	data, err := protojson.Marshal(&protobundle.Bundle{
		MediaType: bundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "fuzz"}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: statement, PayloadType: inTotoPayloadType,
			Signatures: []*protodsse.Signature{{Sig: ed25519.Sign(fuzzKey, pae)}},
		}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// FuzzBundle feeds arbitrary bytes to what readBundle does with a
// referrer's layer: decode it as a Sigstore bundle, skip attestations,
// and verify the rest in key mode against fuzzDigest. It asserts that
// text that is not JSON is refused; that only DSSE in-toto statements of
// another predicate type than a signature's are taken for attestations;
// and that nothing verifies but what fuzzKey signed: a statement
// byte-identical to one the seeds signed, which names fuzzDigest.
func FuzzBundle(f *testing.F) {
	signature := fuzzStatement(signPredicateType)
	signed := map[string]bool{string(signature): true}
	f.Add(fuzzKeyBundle(f, signature))
	attestation := fuzzStatement("https://slsa.dev/provenance/v1")
	signed[string(attestation)] = true
	f.Add(fuzzKeyBundle(f, attestation))
	other := bytes.Replace(signature, []byte("ab"), []byte("cd"), 1)
	signed[string(other)] = true
	f.Add(fuzzKeyBundle(f, other))
	f.Add([]byte(`{"mediaType":"` + bundleMediaType + `"}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1","verificationMaterial":{},"messageSignature":{}}`))
	f.Add(junk(16))
	f.Add([]byte(`{}`))
	trust := fuzzKeyTrust(f)
	sum, err := hex.DecodeString(strings.TrimPrefix(fuzzDigest, "sha256:"))
	if err != nil {
		f.Fatal(err)
	}
	artifact := func() verify.ArtifactPolicyOption { return verify.WithArtifactDigest("sha256", sum) }
	seed := &bundle.Bundle{}
	if err := seed.UnmarshalJSON(fuzzKeyBundle(f, signature)); err != nil {
		f.Fatal(err)
	}
	if _, err := trust.verify(seed, artifact); err != nil {
		f.Fatalf("the signed seed does not verify: %v", err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &bundle.Bundle{}
		if err := b.UnmarshalJSON(data); err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("decoded a bundle from text that is not JSON: %q", data)
		}
		env := b.GetDsseEnvelope()
		if isAttestation(b) {
			var st struct {
				PredicateType string `json:"predicateType"`
			}
			if env == nil || env.GetPayloadType() != inTotoPayloadType || json.Unmarshal(env.GetPayload(), &st) != nil ||
				st.PredicateType == signPredicateType {
				t.Fatalf("took a bundle for an attestation: %s", data)
			}
			return
		}
		if _, err := trust.verify(b, artifact); err != nil {
			return
		}
		if env == nil || !signed[string(env.GetPayload())] {
			t.Fatalf("a bundle that fuzzKey did not sign verified: %s", data)
		}
		if !bytes.Contains(env.GetPayload(), []byte(strings.TrimPrefix(fuzzDigest, "sha256:"))) {
			t.Fatalf("a statement of another artifact verified: %s", env.GetPayload())
		}
	})
}

// FuzzLegacySignature feeds a fuzzed simple-signing payload, signature
// and annotations to what readLegacy does with a layer of a .sig image:
// signedDigest, the key mode bundle (verified against the payload) and
// keylessLegacyBundle. It asserts that signedDigest refuses what is not
// JSON and returns a non-empty digest; that key mode verifies only the
// payload fuzzKey signed, with its signature; and that a keyless bundle,
// when built, carries the payload's sha256 and the signature, a log entry
// exactly when the Rekor annotation is there (with a body that is JSON),
// and a timestamp exactly when the timestamp annotation is there.
func FuzzLegacySignature(f *testing.F) {
	payload := fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":"registry.example/app"},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, fuzzDigest)
	sig := ed25519.Sign(fuzzKey, payload)
	cert, keylessSig, rekor := fuzzKeyless(f, payload)
	stamp := `{"SignedRFC3161Timestamp":"MIIBAA=="}`
	f.Add(payload, sig, "", "", "")
	f.Add(payload, sig, "not a certificate", rekor, stamp)
	f.Add(payload, keylessSig, cert, rekor, stamp)
	f.Add(payload, keylessSig, cert, rekor, "")
	f.Add(payload, sig, cert, "", "")
	f.Add(payload, sig, cert, `{"Payload":{"logID":"xyz"}}`, "")
	f.Add(payload, sig, cert, `{"Payload":{"body":"bm90IGpzb24="}}`, "")
	f.Add(payload, sig, cert, "", `{"SignedRFC3161Timestamp":""}`)
	f.Add([]byte(`{"critical":{"image":{}}}`), []byte{1}, "", "", "")
	f.Add(junk(8), []byte{}, "", "", "")
	trust := fuzzKeyTrust(f)
	keyBundle := func(payload, sig []byte) (*bundle.Bundle, error) {
		return messageBundle(bundleV03MediaType, &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{}},
		}, payload, sig)
	}
	verifies := func(payload, sig []byte) bool {
		b, err := keyBundle(payload, sig)
		if err != nil {
			return false
		}
		_, err = trust.verify(b, func() verify.ArtifactPolicyOption { return verify.WithArtifact(bytes.NewReader(payload)) })
		return err == nil
	}
	if !verifies(payload, sig) {
		f.Fatal("the signed seed does not verify")
	}
	f.Fuzz(func(t *testing.T, payloadIn, sigIn []byte, cert, rekorIn, stampIn string) {
		digest, err := signedDigest(payloadIn)
		if err == nil && (digest == "" || !json.Valid(payloadIn)) {
			t.Fatalf("signedDigest(%q) = %q", payloadIn, digest)
		}

		if verifies(payloadIn, sigIn) && (!bytes.Equal(payloadIn, payload) || !ed25519.Verify(fuzzKey.Public().(ed25519.PublicKey), payloadIn, sigIn)) {
			t.Fatalf("a payload and signature that fuzzKey did not make verified: %q", payloadIn)
		}

		annotations := map[string]string{certificateAnnotation: cert}
		if rekorIn != "" {
			annotations[rekorBundleAnnotation] = rekorIn
		}
		if stampIn != "" {
			annotations[timestampAnnotation] = stampIn
		}
		kb, err := keylessLegacyBundle(payloadIn, sigIn, annotations)
		if err != nil {
			return
		}
		sum := sha256.Sum256(payloadIn)
		ms := kb.GetMessageSignature()
		switch {
		case kb.GetMediaType() != bundleV01MediaType:
			t.Fatalf("keyless bundle of media type %q", kb.GetMediaType())
		case ms == nil || !bytes.Equal(ms.GetMessageDigest().GetDigest(), sum[:]) || !bytes.Equal(ms.GetSignature(), sigIn):
			t.Fatal("the keyless bundle does not carry the payload's digest and the signature")
		case kb.GetVerificationMaterial().GetX509CertificateChain() == nil:
			t.Fatal("the keyless bundle has no certificate")
		case (len(kb.GetVerificationMaterial().GetTlogEntries()) == 1) != (rekorIn != ""):
			t.Fatalf("the keyless bundle has %d log entries for the Rekor annotation %q", len(kb.GetVerificationMaterial().GetTlogEntries()), rekorIn)
		case (kb.GetVerificationMaterial().GetTimestampVerificationData() != nil) != (stampIn != ""):
			t.Fatalf("the keyless bundle's timestamps do not match the annotation %q", stampIn)
		}
		for _, e := range kb.GetVerificationMaterial().GetTlogEntries() {
			if !json.Valid(e.GetCanonicalizedBody()) {
				t.Fatalf("the log entry's body is not JSON: %q", e.GetCanonicalizedBody())
			}
		}
	})
}

// FuzzReferrers feeds a fuzzed referrers index to signatureReferrers and
// a fuzzed manifest to bundleLayer. It asserts that at most maxReferrers
// referrers are kept, none of them an attestation or of another artifact
// type, the bundles first and in their order; and that bundleLayer returns
// a layer of the manifest with the bundle media type, of a manifest that
// says it is a bundle, and nil only when there is no such layer.
func FuzzReferrers(f *testing.F) {
	desc := func(artifactType, predicateType string, i int) string {
		ann := ""
		if predicateType != "" {
			ann = fmt.Sprintf(`,"annotations":{%q:%q}`, predicateTypeAnnotation, predicateType)
		}
		return fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":%d,"digest":"sha256:%064x","artifactType":%q%s}`,
			100+i, i, artifactType, ann)
	}
	var many []string
	for i := range 40 {
		many = append(many, desc([]string{bundleMediaType, "", emptyMediaType, "application/spdx+json"}[i%4], "", i))
	}
	index := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` +
		strings.Join([]string{desc("", "", 1), desc(bundleMediaType, signPredicateType, 2), desc(bundleMediaType, "https://slsa.dev/provenance/v1", 3),
			desc(emptyMediaType, "", 4), desc("application/spdx+json", "", 5)}, ",") + `]}`
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"` + bundleMediaType + `",` +
		`"config":{"mediaType":"` + emptyMediaType + `","size":2,"digest":"sha256:` + strings.Repeat("44", 32) + `"},` +
		`"layers":[{"mediaType":"` + bundleMediaType + `","size":1000,"digest":"sha256:` + strings.Repeat("ab", 32) + `"}]}`
	f.Add([]byte(index), []byte(manifest))
	f.Add([]byte(`{"schemaVersion":2,"manifests":[`+strings.Join(many, ",")+`]}`),
		[]byte(strings.Replace(manifest, `"artifactType"`, `"config":{"artifactType":"`+bundleMediaType+`"},"x"`, 1)))
	f.Add([]byte(`{"manifests":null}`), []byte(`{"layers":[{"mediaType":"`+bundleMediaType+`"}]}`))
	f.Add(junk(4), junk(4))
	f.Fuzz(func(t *testing.T, indexIn, manifestIn []byte) {
		if idx, err := v1.ParseIndexManifest(bytes.NewReader(indexIn)); err == nil {
			got := signatureReferrers(idx.Manifests)
			if len(got) > maxReferrers {
				t.Fatalf("kept %d referrers, more than %d", len(got), maxReferrers)
			}
			var bundles, others []v1.Descriptor
			for _, d := range idx.Manifests {
				if pt, ok := d.Annotations[predicateTypeAnnotation]; ok && pt != signPredicateType {
					continue
				}
				switch d.ArtifactType {
				case bundleMediaType:
					bundles = append(bundles, d)
				case "", emptyMediaType:
					others = append(others, d)
				}
			}
			want := append(bundles, others...)
			want = want[:min(len(want), maxReferrers)]
			if len(got) != len(want) {
				t.Fatalf("kept %d referrers, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].Digest != want[i].Digest || got[i].ArtifactType != want[i].ArtifactType {
					t.Fatalf("referrer %d is %s (%q), want %s (%q)", i, got[i].Digest, got[i].ArtifactType, want[i].Digest, want[i].ArtifactType)
				}
			}
		}
		m, err := v1.ParseManifest(bytes.NewReader(manifestIn))
		if err != nil {
			return
		}
		isBundle := m.ArtifactType == bundleMediaType || m.Config.ArtifactType == bundleMediaType
		hasLayer := false
		for _, l := range m.Layers {
			hasLayer = hasLayer || l.MediaType == bundleMediaType
		}
		l := bundleLayer(m)
		switch {
		case l == nil && isBundle && hasLayer:
			t.Fatal("bundleLayer found no layer in a bundle manifest with a bundle layer")
		case l != nil && (!isBundle || l.MediaType != bundleMediaType):
			t.Fatalf("bundleLayer returned a layer of media type %q of a manifest of artifact type %q", l.MediaType, m.ArtifactType)
		}
	})
}

// fuzzKeyless returns a self-signed certificate (PEM) of a new ECDSA key,
// a signature of payload with it, and cosign's Rekor bundle annotation of
// a hashedrekord entry of that signature (its signed entry timestamp is
// not verified here).
func fuzzKeyless(tb testing.TB, payload []byte) (certPEM string, sig []byte, rekor string) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "windlass-fuzz"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatal(err)
	}
	certPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	sum := sha256.Sum256(payload)
	if sig, err = ecdsa.SignASN1(rand.Reader, key, sum[:]); err != nil {
		tb.Fatal(err)
	}
	body := fmt.Sprintf(`{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"data":{"hash":{"algorithm":"sha256","value":%q}},`+
		`"signature":{"content":%q,"publicKey":{"content":%q}}}}`,
		hex.EncodeToString(sum[:]), base64.StdEncoding.EncodeToString(sig), base64.StdEncoding.EncodeToString([]byte(certPEM)))
	rekor = fmt.Sprintf(`{"SignedEntryTimestamp":"AAEC","Payload":{"body":%q,"integratedTime":1700000000,"logIndex":42,`+
		`"logID":"c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d"}}`, base64.StdEncoding.EncodeToString([]byte(body)))
	return certPEM, sig, rekor
}
