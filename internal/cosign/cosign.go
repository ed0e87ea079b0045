// Package cosign verifies the cosign signatures of OCI artifacts, for the
// OCIRepository controller's `spec.verify.provider: cosign`.
//
// Verify looks for signatures in the two places cosign writes them:
//
//   - cosign v3's Sigstore bundles (the default of `cosign sign`): an OCI
//     image manifest that refers to the signed manifest as its subject, found
//     with the OCI 1.1 referrers API or, on registries without it, the
//     referrers tag schema (an index tagged sha256-<hex>). Its artifactType
//     and its one layer's media type are application/vnd.dev.sigstore.bundle.v0.3+json,
//     its config is the empty descriptor, and the layer is the bundle JSON: a
//     DSSE envelope of an in-toto statement whose subject is the signed
//     manifest's sha256 digest and whose predicate type is
//     https://sigstore.dev/cosign/sign/v1. Attestations (other predicate
//     types) are not signatures and are skipped.
//   - cosign v2's legacy signatures (`cosign sign --new-bundle-format=false`):
//     the image tagged sha256-<hex>.sig, each of whose layers of media type
//     application/vnd.dev.cosign.simplesigning.v1+json is a simple-signing
//     payload naming the signed digest in critical.image.docker-manifest-digest,
//     with the base64 signature over the payload in the annotation
//     dev.cosignproject.cosign/signature (and, when keyless, the certificate,
//     the Rekor bundle and the RFC 3161 timestamp in further annotations).
//
// Every signature is verified with sigstore-go, either with public keys (key
// mode: no transparency log or timestamp is needed, as keys sign offline) or
// with a Sigstore trusted root and the OIDC identities that are trusted
// (keyless mode), and must name the digest being verified.
package cosign

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Identity is a keyless signer that is trusted: regular expressions over
// the OIDC issuer and the certificate subject (SAN). Like cosign's
// --certificate-identity-regexp, they match anywhere in the value unless
// anchored with ^ and $.
type Identity struct {
	Issuer, Subject string
}

// Policy says which signatures are trusted.
type Policy struct {
	// PublicKeys maps a name (e.g. the Secret key "cosign.pub") to a PEM
	// public key; when non-empty, Verify is in key mode and trusts only
	// signatures that verify with one of them.
	PublicKeys map[string][]byte
	// TrustedRoot is a trusted_root.json (Sigstore trusted root format) for
	// keyless mode: its certificate authorities, transparency logs and
	// timestamp authorities.
	TrustedRoot []byte
	// Identities are the keyless signers that are trusted: at least one
	// must match; empty trusts any identity the root certifies.
	Identities []Identity
}

// Result says what verified the artifact.
type Result struct {
	// Signer is "key NAME" in key mode or "identity SUBJECT from ISSUER"
	// in keyless mode.
	Signer string
}

// ErrNoSignature is wrapped by Verify's error when the artifact has no
// cosign signature at all.
var ErrNoSignature = errors.New("no cosign signature found")

// Limits on what Verify reads from a registry.
const (
	// maxReferrers bounds how many referrer manifests are looked at.
	maxReferrers = 32
	// maxManifestSize bounds the size of a referrer manifest.
	maxManifestSize = 64 << 10
	// maxBundleSize bounds the size of a Sigstore bundle.
	maxBundleSize = 256 << 10
	// maxLegacySignatures bounds how many layers of a .sig image are
	// looked at.
	maxLegacySignatures = 32
	// maxPayloadSize bounds the size of a simple-signing payload.
	maxPayloadSize = 64 << 10
)

// Verify checks that the artifact at digest has a cosign signature that p
// trusts, and says which signer made it. The remote options say how to
// reach the registry (credentials, transport); ctx bounds every call.
func Verify(ctx context.Context, digest name.Digest, p Policy, opts ...remote.Option) (Result, error) {
	t, err := p.compile()
	if err != nil {
		return Result{}, err
	}
	if !strings.HasPrefix(digest.DigestStr(), "sha256:") {
		return Result{}, fmt.Errorf("%s: cosign signatures name sha256 digests only", artifactURL(digest))
	}
	opts = append(slices.Clip(opts), remote.WithContext(ctx))
	var tally attempts
	for _, find := range []func(name.Digest, []remote.Option) ([]candidate, error){bundleCandidates, legacyCandidates} {
		candidates, err := find(digest, opts)
		if err != nil {
			return Result{}, err
		}
		for _, c := range candidates {
			res, err := verifyCandidate(t, c)
			if err == nil {
				return res, nil
			}
			tally.add(c.where, err)
		}
	}
	return Result{}, tally.err(digest, t)
}

// verifyCandidate verifies one signature with t.
func verifyCandidate(t trust, c candidate) (Result, error) {
	if c.err != nil {
		return Result{}, c.err
	}
	b, err := c.bundle(t.keyless())
	if err != nil {
		return Result{}, err
	}
	return t.verify(b, c.artifact)
}

// attempts remembers the signatures that did not verify.
type attempts struct {
	tried    int
	first    string
	identity *identityMismatch
}

// add records that the signature at where failed with err.
func (a *attempts) add(where string, err error) {
	a.tried++
	var mismatch *identityMismatch
	if errors.As(err, &mismatch) && a.identity == nil {
		a.identity = mismatch
	}
	if a.first == "" {
		a.first = where + ": " + firstLine(err.Error())
	}
}

// err returns the error of a verification where nothing verified.
func (a *attempts) err(digest name.Digest, t trust) error {
	url := artifactURL(digest)
	switch {
	case a.tried == 0:
		return fmt.Errorf("%w for %s: sign it with cosign sign", ErrNoSignature, url)
	case a.identity != nil:
		return fmt.Errorf("%s is signed by identity %s from issuer %s, which matches no identity of spec.verify.matchOIDCIdentity",
			url, a.identity.subject, a.identity.issuer)
	default:
		return fmt.Errorf("no signature of %s verifies %s (%d tried; %s)", url, t.describe(), a.tried, a.first)
	}
}

// identityMismatch is the error of a keyless signature that verifies but
// whose signer is not trusted.
type identityMismatch struct {
	subject, issuer string
}

// Error says who signed.
func (e *identityMismatch) Error() string {
	return fmt.Sprintf("signed by identity %s from issuer %s, which matches no trusted identity", e.subject, e.issuer)
}

// artifactURL returns the oci:// URL of digest.
func artifactURL(digest name.Digest) string {
	return "oci://" + digest.Name()
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
