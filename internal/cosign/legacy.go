package cosign

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// What cosign v2 writes for a legacy signature.
const (
	// simpleSigningMediaType is the media type of a layer that is a
	// simple-signing payload.
	simpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// signatureAnnotation holds the base64 signature over the payload.
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	// certificateAnnotation holds the PEM signing certificate, when keyless.
	certificateAnnotation = "dev.sigstore.cosign/certificate"
	// rekorBundleAnnotation holds the Rekor entry and its signed entry
	// timestamp, when the signature was logged.
	rekorBundleAnnotation = "dev.sigstore.cosign/bundle"
	// timestampAnnotation holds an RFC 3161 timestamp of the signature.
	timestampAnnotation = "dev.sigstore.cosign/rfc3161timestamp"
)

// Media types of the bundles that legacy signatures are turned into: v0.1
// for keyless ones, whose Rekor entries have an inclusion promise but no
// proof.
const (
	bundleV01MediaType = "application/vnd.dev.sigstore.bundle+json;version=0.1"
	bundleV03MediaType = bundleMediaType
)

// legacyCandidates returns the signatures of digest's .sig tag, at most
// maxLegacySignatures; none when there is no such tag.
func legacyCandidates(digest name.Digest, opts []remote.Option) ([]candidate, error) {
	tag := digest.Context().Tag(strings.Replace(digest.DigestStr(), ":", "-", 1) + ".sig")
	got, err := remote.Get(tag, opts...)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, registryError("reading the signatures oci://"+tag.Name(), err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(got.Manifest))
	if err != nil {
		return nil, fmt.Errorf("oci://%s is not a cosign signature image: %s", tag.Name(), firstLine(err.Error()))
	}
	var out []candidate
	for i, layer := range m.Layers {
		if layer.MediaType != simpleSigningMediaType {
			continue
		}
		if len(out) == maxLegacySignatures {
			break
		}
		c := readLegacy(digest, layer, opts)
		c.where = fmt.Sprintf("legacy signature %d of tag %s", i+1, tag.TagStr())
		out = append(out, c)
	}
	return out, nil
}

// readLegacy reads the legacy signature of the layer and checks that its
// payload names digest.
func readLegacy(digest name.Digest, layer v1.Descriptor, opts []remote.Option) candidate {
	var c candidate
	sig, err := base64.StdEncoding.DecodeString(layer.Annotations[signatureAnnotation])
	if err != nil || len(sig) == 0 {
		c.err = fmt.Errorf("its annotation %s is not a base64 signature", signatureAnnotation)
		return c
	}
	payload, err := readBlob(digest.Context(), layer, maxPayloadSize, opts)
	if err != nil {
		c.err = err
		return c
	}
	signed, err := signedDigest(payload)
	if err != nil {
		c.err = err
		return c
	}
	if signed != digest.DigestStr() {
		c.err = fmt.Errorf("it signs %s, not this digest", shortDigest(signed))
		return c
	}
	c.artifact = func() verify.ArtifactPolicyOption { return verify.WithArtifact(bytes.NewReader(payload)) }
	c.bundle = func(keyless bool) (*bundle.Bundle, error) {
		if keyless {
			return keylessLegacyBundle(payload, sig, layer.Annotations)
		}
		return messageBundle(bundleV03MediaType, &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{}},
		}, payload, sig)
	}
	return c
}

// signedDigest returns the digest that a simple-signing payload names.
func signedDigest(payload []byte) (string, error) {
	var p struct {
		Critical struct {
			Image struct {
				DockerManifestDigest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.Critical.Image.DockerManifestDigest == "" {
		return "", errors.New("its payload is not a simple-signing payload with critical.image.docker-manifest-digest")
	}
	return p.Critical.Image.DockerManifestDigest, nil
}

// messageBundle returns a bundle of the signature sig over payload.
func messageBundle(mediaType string, material *protobundle.VerificationMaterial, payload, sig []byte) (*bundle.Bundle, error) {
	sum := sha256.Sum256(payload)
	return bundle.NewBundle(&protobundle.Bundle{
		MediaType:            mediaType,
		VerificationMaterial: material,
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     sig,
		}},
	})
}

// keylessLegacyBundle returns the bundle of a keyless legacy signature:
// its certificate, its Rekor entry with the signed entry timestamp as
// inclusion promise, and its RFC 3161 timestamp, from the annotations.
func keylessLegacyBundle(payload, sig []byte, annotations map[string]string) (*bundle.Bundle, error) {
	pem := annotations[certificateAnnotation]
	if pem == "" {
		return nil, errors.New("signed with a key, not a keyless certificate: verify it with the key")
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(pem))
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("its annotation %s is not a PEM certificate", certificateAnnotation)
	}
	material := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
			Certificates: []*protocommon.X509Certificate{{RawBytes: certs[0].Raw}},
		}},
	}
	if s, ok := annotations[rekorBundleAnnotation]; ok {
		entry, err := legacyTlogEntry([]byte(s))
		if err != nil {
			return nil, err
		}
		material.TlogEntries = []*protorekor.TransparencyLogEntry{entry}
	}
	if s, ok := annotations[timestampAnnotation]; ok {
		var ts struct {
			SignedRFC3161Timestamp []byte
		}
		if err := json.Unmarshal([]byte(s), &ts); err != nil || len(ts.SignedRFC3161Timestamp) == 0 {
			return nil, fmt.Errorf("its annotation %s is not an RFC 3161 timestamp", timestampAnnotation)
		}
		material.TimestampVerificationData = &protobundle.TimestampVerificationData{
			Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts.SignedRFC3161Timestamp}},
		}
	}
	return messageBundle(bundleV01MediaType, material, payload, sig)
}

// legacyTlogEntry turns cosign's Rekor bundle annotation into a
// transparency log entry whose inclusion promise is the signed entry
// timestamp.
func legacyTlogEntry(annotation []byte) (*protorekor.TransparencyLogEntry, error) {
	var rb struct {
		SignedEntryTimestamp []byte
		Payload              struct {
			Body           []byte
			IntegratedTime int64
			LogIndex       int64
			LogID          string
		}
	}
	if err := json.Unmarshal(annotation, &rb); err != nil {
		return nil, fmt.Errorf("its annotation %s is not a Rekor bundle", rekorBundleAnnotation)
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil {
		return nil, fmt.Errorf("its annotation %s has a log ID that is not hexadecimal", rekorBundleAnnotation)
	}
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(rb.Payload.Body, &kind); err != nil {
		return nil, fmt.Errorf("its annotation %s has a body that is not a Rekor entry", rekorBundleAnnotation)
	}
	return &protorekor.TransparencyLogEntry{
		LogIndex:          rb.Payload.LogIndex,
		LogId:             &protocommon.LogId{KeyId: logID},
		KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
		IntegratedTime:    rb.Payload.IntegratedTime,
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
		CanonicalizedBody: rb.Payload.Body,
	}, nil
}
