package cosign

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// What cosign v3 writes for a signature.
const (
	// bundleMediaType is the artifactType of a bundle's manifest and the
	// media type of its layer.
	bundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// predicateTypeAnnotation is the annotation of a bundle's manifest
	// (copied to the referrers index by registries with the referrers
	// API) that says what its DSSE statement is.
	predicateTypeAnnotation = "dev.sigstore.bundle.predicateType"
	// signPredicateType is the predicate type of a signature, as opposed
	// to an attestation.
	signPredicateType = "https://sigstore.dev/cosign/sign/v1"
	// inTotoPayloadType is the DSSE payload type of in-toto statements.
	inTotoPayloadType = "application/vnd.in-toto+json"
	// emptyMediaType is the media type of the empty config, which some
	// registries give as the artifact type of a referrer.
	emptyMediaType = "application/vnd.oci.empty.v1+json"
)

// candidate is one signature found for an artifact.
type candidate struct {
	// where says where the signature is, for errors.
	where string
	// err, when set, says why the signature cannot be verified.
	err error
	// bundle returns the signature as a Sigstore bundle for key or keyless
	// verification.
	bundle func(keyless bool) (*bundle.Bundle, error)
	// artifact returns what the signature must sign: the digest, or a
	// legacy signature's payload.
	artifact func() verify.ArtifactPolicyOption
}

// bundleCandidates returns the cosign v3 signatures among the referrers of
// digest: at most maxReferrers, skipping attestations.
func bundleCandidates(digest name.Digest, opts []remote.Option) ([]candidate, error) {
	idx, err := remote.Referrers(digest, opts...)
	if err != nil {
		return nil, registryError("listing the referrers of "+artifactURL(digest), err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, registryError("reading the referrers of "+artifactURL(digest), err)
	}
	sum, err := hex.DecodeString(digest.DigestStr()[len("sha256:"):])
	if err != nil {
		return nil, fmt.Errorf("%s: the digest is not hexadecimal", artifactURL(digest))
	}
	artifact := func() verify.ArtifactPolicyOption { return verify.WithArtifactDigest("sha256", sum) }
	var out []candidate
	for _, desc := range signatureReferrers(m.Manifests) {
		c, ok := readBundle(digest, desc, opts)
		if ok {
			c.artifact = artifact
			out = append(out, c)
		}
	}
	return out, nil
}

// signatureReferrers returns the referrers that may be signatures, those
// that say they are bundles first, at most maxReferrers of them.
func signatureReferrers(descs []v1.Descriptor) []v1.Descriptor {
	var bundles, others []v1.Descriptor
	for _, d := range descs {
		if pt, ok := d.Annotations[predicateTypeAnnotation]; ok && pt != signPredicateType {
			continue // an attestation
		}
		switch d.ArtifactType {
		case bundleMediaType:
			bundles = append(bundles, d)
		case "", emptyMediaType:
			others = append(others, d)
		}
	}
	out := append(bundles, others...)
	return out[:min(len(out), maxReferrers)]
}

// readBundle reads the referrer desc of digest; ok is false when it is not a
// cosign signature (another kind of referrer, or an attestation).
func readBundle(digest name.Digest, desc v1.Descriptor, opts []remote.Option) (c candidate, ok bool) {
	c.where = "bundle " + shortDigest(desc.Digest.String())
	if desc.Size > maxManifestSize {
		c.err = fmt.Errorf("its manifest is larger than %d bytes", maxManifestSize)
		return c, true
	}
	got, err := remote.Get(digest.Context().Digest(desc.Digest.String()), opts...)
	if err != nil {
		c.err = registryError("reading it", err)
		return c, true
	}
	m, err := v1.ParseManifest(bytes.NewReader(got.Manifest))
	if err != nil {
		c.err = fmt.Errorf("its manifest is not an OCI manifest: %w", err)
		return c, true
	}
	layer := bundleLayer(m)
	if layer == nil {
		return c, false
	}
	data, err := readBlob(digest.Context(), *layer, maxBundleSize, opts)
	if err != nil {
		c.err = err
		return c, true
	}
	b := &bundle.Bundle{}
	if err := b.UnmarshalJSON(data); err != nil {
		c.err = fmt.Errorf("not a Sigstore bundle: %w", err)
		return c, true
	}
	if isAttestation(b) {
		return c, false
	}
	c.bundle = func(bool) (*bundle.Bundle, error) { return b, nil }
	return c, true
}

// bundleLayer returns the layer of m that holds a bundle, or nil when m is
// not a bundle.
func bundleLayer(m *v1.Manifest) *v1.Descriptor {
	if m.ArtifactType != bundleMediaType && m.Config.ArtifactType != bundleMediaType {
		return nil
	}
	for i := range m.Layers {
		if m.Layers[i].MediaType == bundleMediaType {
			return &m.Layers[i]
		}
	}
	return nil
}

// isAttestation says whether b is an in-toto statement of another predicate
// type than a signature's. It reads the statement before it is verified,
// which is safe only because it is used to skip bundles, never to trust
// them.
func isAttestation(b *bundle.Bundle) bool {
	env := b.GetDsseEnvelope()
	if env == nil || env.GetPayloadType() != inTotoPayloadType {
		return false
	}
	var statement struct {
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(env.GetPayload(), &statement); err != nil {
		return false
	}
	return statement.PredicateType != signPredicateType
}

// readBlob reads the blob desc of repo, at most limit bytes, checking its
// digest.
func readBlob(repo name.Repository, desc v1.Descriptor, limit int64, opts []remote.Option) ([]byte, error) {
	if desc.Size > limit {
		return nil, fmt.Errorf("its blob %s is larger than %d bytes", shortDigest(desc.Digest.String()), limit)
	}
	layer, err := remote.Layer(repo.Digest(desc.Digest.String()), opts...)
	if err != nil {
		return nil, registryError("reading its blob", err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, registryError("reading its blob", err)
	}
	defer rc.Close()
	// Reading to the end makes the reader check the digest.
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, registryError("reading its blob", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("its blob %s is larger than %d bytes", shortDigest(desc.Digest.String()), limit)
	}
	if h, _, err := v1.SHA256(bytes.NewReader(data)); err != nil || h != desc.Digest {
		return nil, fmt.Errorf("its blob does not match its digest %s", shortDigest(desc.Digest.String()))
	}
	return data, nil
}

// shortDigest returns a digest cut to 12 hex digits.
func shortDigest(d string) string {
	algo, hexPart, ok := strings.Cut(d, ":")
	if !ok || len(hexPart) <= 12 {
		return d
	}
	return algo + ":" + hexPart[:12]
}

// registryError rewrites err, of a registry call, as one line saying what
// failed, with a hint for the statuses users can fix.
func registryError(what string, err error) error {
	msg := firstLine(err.Error())
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusUnauthorized:
			msg = "the registry refused the credentials (401 Unauthorized): check spec.secretRef"
		case http.StatusForbidden:
			msg = "the registry denied access (403 Forbidden): check that the credentials may read the repository"
		}
	}
	return fmt.Errorf("%s: %s", what, msg)
}

// isNotFound says whether err is a registry's 404.
func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}
