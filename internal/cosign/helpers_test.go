package cosign

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// testRegistry is a registry the tests push to.
type testRegistry struct {
	name string
	host string
}

// startRegistries starts the in-process registry with the referrers API
// and the distribution registry, which has none (cosign and Verify use the
// referrers tag schema there).
func startRegistries(t *testing.T) []testRegistry {
	t.Helper()
	return []testRegistry{
		{name: "referrers api", host: testutil.StartRegistry(t, "", "")},
		{name: "tag schema", host: testservers.StartRegistry(t, testservers.RegistryOptions{}).Host},
	}
}

// pushImage pushes a random image to host/repo:v1 with opts and returns
// its digest.
func pushImage(t *testing.T, host, repo string, opts ...remote.Option) name.Digest {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(host + "/" + repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(d.String())
}

// runCosign runs the real cosign CLI in dir, offline: an empty key
// password and a private HOME and TUF cache. It fails t unless cosign
// succeeds.
func runCosign(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := testservers.RunCosign(t, dir, args...); err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// generateKeys makes a cosign key pair in a new folder and returns the
// folder and the PEM public key.
func generateKeys(t *testing.T) (string, []byte) {
	return testservers.GenerateKeyPair(t)
}

// signWithKey signs digest with the cosign.key of dir, offline, in
// cosign v3's bundle format or, with legacy, cosign v2's .sig tag.
func signWithKey(t *testing.T, dir string, digest name.Digest, legacy bool) {
	testservers.SignWithKey(t, dir, digest.Name(), legacy)
}

// copySignature attaches the signature of from to to, as someone with
// push access to the repository could.
func copySignature(t *testing.T, from, to name.Digest, legacy bool) {
	t.Helper()
	if legacy {
		sig, err := remote.Get(from.Context().Tag(tagOf(from) + ".sig"))
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Tag(to.Context().Tag(tagOf(to)+".sig"), sig); err != nil {
			t.Fatal(err)
		}
		return
	}
	m := referrerManifest(t, from)
	m.Subject = subjectOf(t, to)
	putManifest(t, to.Context(), m)
}

// tagOf returns the tag-schema form of a digest, sha256-<hex>.
func tagOf(d name.Digest) string {
	return strings.Replace(d.DigestStr(), ":", "-", 1)
}

// referrerManifest returns the one bundle manifest that refers to d.
func referrerManifest(t *testing.T, d name.Digest) v1.Manifest {
	t.Helper()
	idx, err := remote.Referrers(d)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%s has %d referrers, want 1", d, len(im.Manifests))
	}
	got, err := remote.Get(d.Context().Digest(im.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(got.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// subjectOf returns the descriptor of the manifest d.
func subjectOf(t *testing.T, d name.Digest) *v1.Descriptor {
	t.Helper()
	desc, err := remote.Head(d)
	if err != nil {
		t.Fatal(err)
	}
	return &v1.Descriptor{MediaType: desc.MediaType, Size: desc.Size, Digest: desc.Digest}
}

// rawManifest is a manifest to put as is.
type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

// RawManifest returns the bytes.
func (r rawManifest) RawManifest() ([]byte, error) { return r.raw, nil }

// MediaType returns the media type.
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mediaType, nil }

// putManifest puts m into repo by digest; go-containerregistry updates the
// referrers tag when the registry has no referrers API.
func putManifest(t *testing.T, repo name.Repository, m v1.Manifest) name.Digest {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	ref := repo.Digest("sha256:" + hex.EncodeToString(sum[:]))
	if err := remote.Put(ref, rawManifest{raw: raw, mediaType: types.OCIManifestSchema1}); err != nil {
		t.Fatal(err)
	}
	return ref
}

// pushBlob pushes data to repo and returns its descriptor.
func pushBlob(t *testing.T, repo name.Repository, data []byte, mediaType types.MediaType) v1.Descriptor {
	t.Helper()
	layer := static.NewLayer(data, mediaType)
	if err := remote.WriteLayer(repo, layer); err != nil {
		t.Fatal(err)
	}
	d, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return v1.Descriptor{MediaType: mediaType, Size: int64(len(data)), Digest: d}
}

// attachBundle attaches bundleJSON to subject as cosign v3 does: an OCI
// manifest of artifactType bundleMediaType, with the empty config, the
// bundle as its one layer, and subject as its subject.
func attachBundle(t *testing.T, subject name.Digest, bundleJSON []byte, predicateType string) {
	t.Helper()
	repo := subject.Context()
	config := pushBlob(t, repo, []byte("{}"), emptyMediaType)
	config.ArtifactType = bundleMediaType
	putManifest(t, repo, v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  bundleMediaType,
		Config:        config,
		Layers:        []v1.Descriptor{pushBlob(t, repo, bundleJSON, bundleMediaType)},
		Annotations: map[string]string{
			"dev.sigstore.bundle.content": "dsse-envelope",
			predicateTypeAnnotation:       predicateType,
		},
		Subject: subjectOf(t, subject),
	})
}

// Identity of the keyless signer of the virtual Sigstore tests.
const (
	testSubject = "dev@example.com"
	testIssuer  = "https://issuer.example"
)

// newVirtualSigstore returns a virtual Sigstore (certificate authority,
// transparency log, timestamp authority) and its trusted_root.json.
func newVirtualSigstore(t *testing.T) (*ca.VirtualSigstore, []byte) {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	// The virtual Sigstore's log IDs are hex text; a trusted root holds
	// the raw key IDs.
	logs := map[string]*root.TransparencyLog{}
	for id, l := range vs.RekorLogs() {
		raw, err := hex.DecodeString(string(l.ID))
		if err != nil {
			t.Fatal(err)
		}
		c := *l
		c.ID = raw
		logs[id] = &c
	}
	// No certificate transparency log: the virtual certificates have no
	// SCT.
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil,
		vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return vs, data
}

// statement returns cosign's in-toto statement for digest.
func statement(digest name.Digest, predicateType string) []byte {
	return fmt.Appendf(nil, `{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":%q},"annotations":{}}],"predicateType":%q,"predicate":{}}`,
		strings.TrimPrefix(digest.DigestStr(), "sha256:"), predicateType)
}

// keylessBundle signs the statement of digest as identity from issuer with
// the virtual Sigstore, and returns the v0.3 bundle JSON that cosign would
// write: certificate, DSSE envelope, a Rekor entry with an inclusion proof
// and an RFC 3161 timestamp.
func keylessBundle(t *testing.T, vs *ca.VirtualSigstore, digest name.Digest, identity, issuer, predicateType string) []byte {
	t.Helper()
	entity, err := vs.AttestAtTime(identity, issuer, statement(digest, predicateType), time.Now().Add(time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := entity.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := entity.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := entity.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	stamps, err := entity.Timestamps()
	if err != nil {
		t.Fatal(err)
	}
	b := &protobundle.Bundle{
		MediaType: bundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{
				Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw},
			},
			TlogEntries:               protoEntries(t, entries),
			TimestampVerificationData: timestampData(stamps),
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload:     payload,
			PayloadType: env.PayloadType,
			Signatures:  []*protodsse.Signature{{Sig: sig}},
		}},
	}
	data, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// protoEntries returns the protobuf form of the virtual Sigstore's log
// entries, with the kind and version of their bodies.
func protoEntries(t *testing.T, entries []*tlog.Entry) []*protorekor.TransparencyLogEntry {
	t.Helper()
	var out []*protorekor.TransparencyLogEntry
	for _, e := range entries {
		tle := proto.Clone(e.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
		var kind struct {
			Kind       string `json:"kind"`
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(tle.CanonicalizedBody, &kind); err != nil {
			t.Fatal(err)
		}
		tle.KindVersion = &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion}
		out = append(out, tle)
	}
	return out
}

// timestampData returns the RFC 3161 timestamps as verification data.
func timestampData(stamps [][]byte) *protobundle.TimestampVerificationData {
	d := &protobundle.TimestampVerificationData{}
	for _, s := range stamps {
		d.Rfc3161Timestamps = append(d.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: s})
	}
	return d
}

// attachKeylessLegacy signs a simple-signing payload for digest as
// identity from issuer with the virtual Sigstore and pushes it as cosign
// v2 does: the image sha256-<hex>.sig with the payload as a layer and the
// signature, certificate, Rekor bundle and timestamp as its annotations.
func attachKeylessLegacy(t *testing.T, vs *ca.VirtualSigstore, digest name.Digest, identity, issuer string) {
	t.Helper()
	payload := legacyPayload(digest)
	entity, err := vs.Sign(identity, issuer, payload)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := entity.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := cryptoutils.MarshalCertificateToPEM(vc.Certificate())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := entity.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	stamps, err := entity.Timestamps()
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := json.Marshal(map[string][]byte{"SignedRFC3161Timestamp": stamps[0]})
	if err != nil {
		t.Fatal(err)
	}
	attachLegacy(t, digest, payload, map[string]string{
		signatureAnnotation:   base64.StdEncoding.EncodeToString(sc.Signature()),
		certificateAnnotation: string(certPEM),
		rekorBundleAnnotation: rekorBundle(t, vs, entity),
		timestampAnnotation:   string(stamp),
	})
}

// legacyPayload returns cosign's simple-signing payload for digest.
func legacyPayload(digest name.Digest) []byte {
	return fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
		digest.Context().Name(), digest.DigestStr())
}

// attachLegacy pushes the image sha256-<hex>.sig of digest as cosign v2
// does, with payload as its one layer, annotated with annotations.
func attachLegacy(t *testing.T, digest name.Digest, payload []byte, annotations map[string]string) {
	t.Helper()
	repo := digest.Context()
	layer := pushBlob(t, repo, payload, simpleSigningMediaType)
	layer.Annotations = annotations
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        pushBlob(t, repo, []byte(`{"rootfs":{"type":"layers","diff_ids":[]}}`), types.OCIConfigJSON),
		Layers:        []v1.Descriptor{layer},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(repo.Tag(tagOf(digest)+".sig"), rawManifest{raw: raw, mediaType: types.OCIManifestSchema1}); err != nil {
		t.Fatal(err)
	}
}

// rekorBundle returns cosign's Rekor bundle annotation of the entity's log
// entry: the entry and its signed entry timestamp, signed by the virtual
// log.
func rekorBundle(t *testing.T, vs *ca.VirtualSigstore, entity *ca.TestEntity) string {
	t.Helper()
	entries, err := entity.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	tle := entries[0].TransparencyLogEntry()
	payload := tlog.RekorPayload{
		Body:           base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
		IntegratedTime: tle.IntegratedTime,
		LogIndex:       tle.LogIndex,
		LogID:          hex.EncodeToString(tle.LogId.KeyId),
	}
	set, err := vs.RekorSignPayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": payload})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// mustDigest parses a digest reference.
func mustDigest(t *testing.T, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// junk returns n bytes that are not JSON.
func junk(n int) []byte {
	return bytes.Repeat([]byte("x"), n)
}
