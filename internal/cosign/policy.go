package cosign

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// trust verifies bundles against a compiled Policy.
type trust interface {
	// keyless says whether signatures are verified with certificates
	// rather than keys.
	keyless() bool
	// verify verifies b over the artifact that artifact returns (a new
	// one for every call) and says who signed it.
	verify(b *bundle.Bundle, artifact func() verify.ArtifactPolicyOption) (Result, error)
	// describe says what signatures are verified with, for errors.
	describe() string
}

// compile checks p and returns what verifies signatures with it: its keys
// when it has some, else its trusted root and identities.
func (p Policy) compile() (trust, error) {
	if len(p.PublicKeys) > 0 {
		return compileKeys(p.PublicKeys)
	}
	if len(p.TrustedRoot) == 0 {
		return nil, errors.New("cosign verification needs public keys or, for keyless signatures, a Sigstore trusted root")
	}
	return compileKeyless(p.TrustedRoot, p.Identities)
}

// keyTrust verifies signatures made with any of a set of public keys.
type keyTrust struct {
	keys []namedVerifier
}

// namedVerifier is the sigstore-go verifier of one public key.
type namedVerifier struct {
	name     string
	verifier *verify.Verifier
}

// compileKeys parses the PEM public keys, in the order of their names.
func compileKeys(pems map[string][]byte) (*keyTrust, error) {
	names := make([]string, 0, len(pems))
	for n := range pems {
		names = append(names, n)
	}
	slices.Sort(names)
	t := &keyTrust{}
	for _, n := range names {
		v, err := keyVerifier(pems[n])
		if err != nil {
			return nil, fmt.Errorf("public key %s: %w", n, err)
		}
		t.keys = append(t.keys, namedVerifier{name: n, verifier: v})
	}
	return t, nil
}

// keyVerifier returns a sigstore-go verifier that trusts the PEM public key
// whatever key hint a bundle has, and needs no timestamp.
func keyVerifier(pem []byte) (*verify.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem)
	if err != nil {
		return nil, errors.New("not a PEM public key: give the cosign.pub that cosign generate-key-pair wrote")
	}
	sv, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("unsupported public key: %w", err)
	}
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return key, nil
	})
	return verify.NewVerifier(material, verify.WithNoObserverTimestamps())
}

// keyless says false: keys verify.
func (t *keyTrust) keyless() bool { return false }

// describe names the keys.
func (t *keyTrust) describe() string {
	names := make([]string, len(t.keys))
	for i, k := range t.keys {
		names[i] = k.name
	}
	return "with the keys " + strings.Join(names, ", ")
}

// verify tries every key in turn and returns the first that verifies b, or
// the error of the first key.
func (t *keyTrust) verify(b *bundle.Bundle, artifact func() verify.ArtifactPolicyOption) (Result, error) {
	var first error
	for _, k := range t.keys {
		_, err := k.verifier.Verify(b, verify.NewPolicy(artifact(), verify.WithKey()))
		if err == nil {
			return Result{Signer: "key " + k.name}, nil
		}
		if first == nil {
			first = err
		}
	}
	return Result{}, first
}

// keylessTrust verifies signatures made with certificates of a Sigstore
// trusted root, by trusted identities.
type keylessTrust struct {
	verifier *verify.Verifier
	// identities are the trusted signers; empty trusts any.
	identities verify.CertificateIdentities
}

// compileKeyless parses the trusted root and the identities, and asks for
// what the root can check: an SCT when it has certificate transparency
// logs, a transparency log entry when it has transparency logs, and one
// observed time (a log's or a timestamp authority's) for the certificate.
func compileKeyless(rootJSON []byte, identities []Identity) (*keylessTrust, error) {
	tr, err := root.NewTrustedRootFromJSON(rootJSON)
	if err != nil {
		return nil, fmt.Errorf("the trusted root is not a Sigstore trusted_root.json: %s", firstLine(err.Error()))
	}
	if len(tr.FulcioCertificateAuthorities()) == 0 {
		return nil, errors.New("the trusted root has no certificate authority: keyless signatures cannot be verified with it")
	}
	if len(tr.RekorLogs()) == 0 && len(tr.TimestampingAuthorities()) == 0 {
		return nil, errors.New("the trusted root has neither a transparency log nor a timestamp authority: keyless signatures cannot be verified with it")
	}
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if len(tr.RekorLogs()) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if len(tr.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(tr, opts...)
	if err != nil {
		return nil, fmt.Errorf("the trusted root: %w", err)
	}
	t := &keylessTrust{verifier: v}
	for i, id := range identities {
		if id.Issuer == "" || id.Subject == "" {
			return nil, fmt.Errorf("spec.verify.matchOIDCIdentity[%d] needs both an issuer and a subject regular expression", i)
		}
		ci, err := verify.NewShortCertificateIdentity("", id.Issuer, "", id.Subject)
		if err != nil {
			return nil, fmt.Errorf("spec.verify.matchOIDCIdentity[%d] is not a regular expression: %w", i, err)
		}
		t.identities = append(t.identities, ci)
	}
	return t, nil
}

// keyless says true: certificates verify.
func (t *keylessTrust) keyless() bool { return true }

// describe names the trusted root.
func (t *keylessTrust) describe() string { return "with the trusted root" }

// verify verifies b, then checks that its certificate's identity is
// trusted; an *identityMismatch says who signed when it is not.
func (t *keylessTrust) verify(b *bundle.Bundle, artifact func() verify.ArtifactPolicyOption) (Result, error) {
	content, err := b.VerificationContent()
	if err != nil {
		return Result{}, err
	}
	if content.Certificate() == nil {
		return Result{}, errors.New("signed with a key, not a keyless certificate: verify it with the key")
	}
	res, err := t.verifier.Verify(b, verify.NewPolicy(artifact(), verify.WithoutIdentitiesUnsafe()))
	if err != nil {
		return Result{}, err
	}
	cert := res.Signature.Certificate
	if cert == nil {
		return Result{}, errors.New("signed with a key, not a keyless certificate: verify it with the key")
	}
	if len(t.identities) > 0 {
		if _, err := t.identities.Verify(*cert); err != nil {
			return Result{}, &identityMismatch{subject: cert.SubjectAlternativeName, issuer: cert.Issuer}
		}
	}
	return Result{Signer: fmt.Sprintf("identity %s from %s", cert.SubjectAlternativeName, cert.Issuer)}, nil
}
