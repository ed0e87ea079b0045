package cosign

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestVerifyKeyModeWithTheCosignCLI signs with the real cosign CLI, offline,
// in both formats, on a registry with the referrers API and on one without.
func TestVerifyKeyModeWithTheCosignCLI(t *testing.T) {
	keys, pub := generateKeys(t)
	_, otherPub := generateKeys(t)
	for _, reg := range startRegistries(t) {
		for _, format := range []struct {
			name   string
			legacy bool
		}{{name: "bundle"}, {name: "legacy", legacy: true}} {
			t.Run(reg.name+"/"+format.name, func(t *testing.T) {
				repo := strings.ReplaceAll(reg.name, " ", "-") + "-" + format.name
				signed := pushImage(t, reg.host, repo)
				signWithKey(t, keys, signed, format.legacy)
				unsigned := pushImage(t, reg.host, repo)
				copied := pushImage(t, reg.host, repo)
				copySignature(t, signed, copied, format.legacy)

				for _, tc := range []struct {
					name    string
					keys    map[string][]byte
					digest  string
					signer  string
					noSig   bool
					errText string
				}{
					{name: "the right key", keys: map[string][]byte{"cosign.pub": pub}, digest: signed.String(), signer: "key cosign.pub"},
					{name: "one of the keys", keys: map[string][]byte{"a.pub": otherPub, "cosign.pub": pub}, digest: signed.String(), signer: "key cosign.pub"},
					{name: "another key", keys: map[string][]byte{"other.pub": otherPub}, digest: signed.String(),
						errText: "no signature of oci://" + signed.Name() + " verifies with the keys other.pub (1 tried; "},
					{name: "unsigned", keys: map[string][]byte{"cosign.pub": pub}, digest: unsigned.String(), noSig: true,
						errText: "no cosign signature found for oci://" + unsigned.Name()},
					{name: "signature of another digest", keys: map[string][]byte{"cosign.pub": pub}, digest: copied.String(),
						errText: "no signature of oci://" + copied.Name() + " verifies with the keys cosign.pub"},
				} {
					t.Run(tc.name, func(t *testing.T) {
						g := NewWithT(t)
						res, err := Verify(context.Background(), mustDigest(t, tc.digest), Policy{PublicKeys: tc.keys})
						if tc.errText != "" {
							g.Expect(err).To(MatchError(ContainSubstring(tc.errText)))
							g.Expect(errors.Is(err, ErrNoSignature)).To(Equal(tc.noSig))
							g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
							return
						}
						g.Expect(err).NotTo(HaveOccurred())
						g.Expect(res.Signer).To(Equal(tc.signer))
					})
				}
			})
		}
	}
}

// TestVerifyTriesEverySignature checks that a signature that verifies is
// found behind others that do not, in either place.
func TestVerifyTriesEverySignature(t *testing.T) {
	g := NewWithT(t)
	keysA, pubA := generateKeys(t)
	keysB, pubB := generateKeys(t)
	host := testutil.StartRegistry(t, "", "")
	digest := pushImage(t, host, "app")
	signWithKey(t, keysA, digest, false)
	signWithKey(t, keysB, digest, false)
	signWithKey(t, keysA, digest, true)

	for name, pub := range map[string][]byte{"a.pub": pubA, "b.pub": pubB} {
		res, err := Verify(context.Background(), digest, Policy{PublicKeys: map[string][]byte{name: pub}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Signer).To(Equal("key " + name))
	}
	_, otherPub := generateKeys(t)
	_, err := Verify(context.Background(), digest, Policy{PublicKeys: map[string][]byte{"other.pub": otherPub}})
	g.Expect(err).To(MatchError(ContainSubstring("verifies with the keys other.pub (3 tried; bundle sha256:")))
}

// TestVerifyCopiedSignatureSaysWhatItSigns checks the reason given for a
// legacy signature of another digest.
func TestVerifyCopiedSignatureSaysWhatItSigns(t *testing.T) {
	g := NewWithT(t)
	keys, pub := generateKeys(t)
	host := testutil.StartRegistry(t, "", "")
	signed := pushImage(t, host, "app")
	signWithKey(t, keys, signed, true)
	copied := pushImage(t, host, "app")
	copySignature(t, signed, copied, true)

	_, err := Verify(context.Background(), copied, Policy{PublicKeys: map[string][]byte{"cosign.pub": pub}})
	g.Expect(err).To(MatchError(ContainSubstring("it signs " + shortDigest(signed.DigestStr()) + ", not this digest")))
}

// TestVerifyKeylessWithAVirtualSigstore verifies bundles signed with
// certificates of a virtual Sigstore, in cosign v3's layout.
func TestVerifyKeylessWithAVirtualSigstore(t *testing.T) {
	vs, rootJSON := newVirtualSigstore(t)
	_, otherRoot := newVirtualSigstore(t)
	_, pub := generateKeys(t)
	host := testutil.StartRegistry(t, "", "")

	signed := pushImage(t, host, "app")
	attachBundle(t, signed, keylessBundle(t, vs, signed, testSubject, testIssuer, signPredicateType), signPredicateType)
	attested := pushImage(t, host, "app")
	const slsa = "https://slsa.dev/provenance/v1"
	attachBundle(t, attested, keylessBundle(t, vs, attested, testSubject, testIssuer, slsa), slsa)
	copied := pushImage(t, host, "app")
	attachBundle(t, copied, keylessBundle(t, vs, signed, testSubject, testIssuer, signPredicateType), signPredicateType)
	legacy := pushImage(t, host, "app")
	attachKeylessLegacy(t, vs, legacy, testSubject, testIssuer)

	trusted := []Identity{{Issuer: `^https://issuer\.example$`, Subject: `^dev@example\.com$`}}
	for _, tc := range []struct {
		name    string
		digest  string
		policy  Policy
		noSig   bool
		errText string
	}{
		{name: "matching identity", digest: signed.String(), policy: Policy{TrustedRoot: rootJSON, Identities: trusted}},
		{name: "one of the identities", digest: signed.String(), policy: Policy{TrustedRoot: rootJSON, Identities: []Identity{
			{Issuer: "nobody", Subject: "nobody"}, trusted[0]}}},
		{name: "any identity", digest: signed.String(), policy: Policy{TrustedRoot: rootJSON}},
		{name: "legacy keyless", digest: legacy.String(), policy: Policy{TrustedRoot: rootJSON, Identities: trusted}},
		{name: "another subject", digest: signed.String(),
			policy:  Policy{TrustedRoot: rootJSON, Identities: []Identity{{Issuer: trusted[0].Issuer, Subject: `^ops@example\.com$`}}},
			errText: "oci://" + signed.Name() + " is signed by identity dev@example.com from issuer https://issuer.example, which matches no identity of spec.verify.matchOIDCIdentity"},
		{name: "another issuer", digest: signed.String(),
			policy:  Policy{TrustedRoot: rootJSON, Identities: []Identity{{Issuer: `^https://accounts\.example$`, Subject: trusted[0].Subject}}},
			errText: "is signed by identity dev@example.com from issuer https://issuer.example, which matches no identity"},
		{name: "legacy keyless, another subject", digest: legacy.String(),
			policy:  Policy{TrustedRoot: rootJSON, Identities: []Identity{{Issuer: trusted[0].Issuer, Subject: "^ops@"}}},
			errText: "is signed by identity dev@example.com from issuer https://issuer.example"},
		{name: "another trusted root", digest: signed.String(), policy: Policy{TrustedRoot: otherRoot, Identities: trusted},
			errText: "no signature of oci://" + signed.Name() + " verifies with the trusted root (1 tried; bundle sha256:"},
		{name: "legacy keyless, another trusted root", digest: legacy.String(), policy: Policy{TrustedRoot: otherRoot},
			errText: "verifies with the trusted root (1 tried; legacy signature 1 of tag "},
		{name: "a key instead", digest: signed.String(), policy: Policy{PublicKeys: map[string][]byte{"cosign.pub": pub}},
			errText: "verifies with the keys cosign.pub"},
		{name: "an attestation is no signature", digest: attested.String(), policy: Policy{TrustedRoot: rootJSON}, noSig: true,
			errText: "no cosign signature found"},
		{name: "signature of another digest", digest: copied.String(), policy: Policy{TrustedRoot: rootJSON},
			errText: "no signature of oci://" + copied.Name() + " verifies with the trusted root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := Verify(context.Background(), mustDigest(t, tc.digest), tc.policy)
			if tc.errText != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.errText)))
				g.Expect(errors.Is(err, ErrNoSignature)).To(Equal(tc.noSig))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Signer).To(Equal("identity dev@example.com from https://issuer.example"))
		})
	}
}

// TestVerifyKeyModeRefusesKeylessLegacySignature checks that a
// keyless legacy signature does not verify with a key.
func TestVerifyKeyModeRefusesKeylessLegacySignature(t *testing.T) {
	g := NewWithT(t)
	vs, _ := newVirtualSigstore(t)
	_, pub := generateKeys(t)
	host := testutil.StartRegistry(t, "", "")
	legacy := pushImage(t, host, "app")
	attachKeylessLegacy(t, vs, legacy, testSubject, testIssuer)

	_, err := Verify(context.Background(), legacy, Policy{PublicKeys: map[string][]byte{"cosign.pub": pub}})
	g.Expect(err).To(MatchError(ContainSubstring("verifies with the keys cosign.pub (1 tried; legacy signature 1")))
}

// TestVerifyKeylessRefusesKeySignature checks that a key signature does not
// verify in keyless mode.
func TestVerifyKeylessRefusesKeySignature(t *testing.T) {
	g := NewWithT(t)
	_, rootJSON := newVirtualSigstore(t)
	keys, _ := generateKeys(t)
	host := testutil.StartRegistry(t, "", "")
	for _, legacy := range []bool{false, true} {
		signed := pushImage(t, host, "app")
		signWithKey(t, keys, signed, legacy)
		_, err := Verify(context.Background(), signed, Policy{TrustedRoot: rootJSON})
		g.Expect(err).To(MatchError(ContainSubstring("signed with a key, not a keyless certificate")))
	}
}

// TestVerifyPolicyErrors checks the policies that cannot verify anything.
func TestVerifyPolicyErrors(t *testing.T) {
	_, rootJSON := newVirtualSigstore(t)
	host := testutil.StartRegistry(t, "", "")
	digest := pushImage(t, host, "app")
	for _, tc := range []struct {
		name    string
		policy  Policy
		errText string
	}{
		{name: "nothing", errText: "cosign verification needs public keys or, for keyless signatures, a Sigstore trusted root"},
		{name: "not a key", policy: Policy{PublicKeys: map[string][]byte{"cosign.pub": []byte("nope")}},
			errText: "public key cosign.pub: not a PEM public key"},
		{name: "not a root", policy: Policy{TrustedRoot: []byte(`{"mediaType":"nope"}`)},
			errText: "the trusted root is not a Sigstore trusted_root.json"},
		{name: "identity without subject", policy: Policy{TrustedRoot: rootJSON, Identities: []Identity{{Issuer: ".*"}}},
			errText: "spec.verify.matchOIDCIdentity[0] needs both an issuer and a subject regular expression"},
		{name: "identity not a regexp", policy: Policy{TrustedRoot: rootJSON, Identities: []Identity{{Issuer: ".*", Subject: "("}}},
			errText: "spec.verify.matchOIDCIdentity[0] is not a regular expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Verify(context.Background(), digest, tc.policy)
			g.Expect(err).To(MatchError(ContainSubstring(tc.errText)))
			g.Expect(errors.Is(err, ErrNoSignature)).To(BeFalse())
		})
	}
}

// TestVerifyBoundsWhatItReads checks that bundles and payloads larger than
// the limits are not read, that at most maxReferrers referrers are looked
// at, and that signatures that are not what cosign writes are refused.
func TestVerifyBoundsWhatItReads(t *testing.T) {
	_, pub := generateKeys(t)
	host := testutil.StartRegistry(t, "", "")
	sig := map[string]string{signatureAnnotation: "c2lnbmF0dXJl"}
	for _, tc := range []struct {
		name    string
		attach  func(t *testing.T, digest name.Digest)
		errText string
	}{
		{name: "bundle too large", errText: "is larger than 262144 bytes", attach: func(t *testing.T, d name.Digest) {
			attachBundle(t, d, junk(maxBundleSize+1), signPredicateType)
		}},
		{name: "not a bundle", errText: "not a Sigstore bundle", attach: func(t *testing.T, d name.Digest) {
			attachBundle(t, d, junk(100), signPredicateType)
		}},
		{name: "too many referrers", errText: "(32 tried; bundle sha256:", attach: func(t *testing.T, d name.Digest) {
			for i := range maxReferrers + 1 {
				attachBundle(t, d, junk(i+1), signPredicateType)
			}
		}},
		{name: "payload too large", errText: "is larger than 65536 bytes", attach: func(t *testing.T, d name.Digest) {
			attachLegacy(t, d, junk(maxPayloadSize+1), sig)
		}},
		{name: "not a simple-signing payload", errText: "its payload is not a simple-signing payload", attach: func(t *testing.T, d name.Digest) {
			attachLegacy(t, d, []byte(`{"critical":{}}`), sig)
		}},
		{name: "no signature annotation", errText: "its annotation dev.cosignproject.cosign/signature is not a base64 signature",
			attach: func(t *testing.T, d name.Digest) { attachLegacy(t, d, legacyPayload(d), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			digest := pushImage(t, host, "app")
			tc.attach(t, digest)
			_, err := Verify(context.Background(), digest, Policy{PublicKeys: map[string][]byte{"cosign.pub": pub}})
			g.Expect(err).To(MatchError(ContainSubstring(tc.errText)))
			g.Expect(errors.Is(err, ErrNoSignature)).To(BeFalse())
		})
	}
}

// TestVerifyWithCredentials checks that the remote options reach the
// registry, and that a refusal says so without the password.
func TestVerifyWithCredentials(t *testing.T) {
	g := NewWithT(t)
	_, pub := generateKeys(t)
	host := testutil.StartRegistry(t, "user", "s3cret")
	auth := remote.WithAuth(&authn.Basic{Username: "user", Password: "s3cret"})
	digest := pushImage(t, host, "app", auth)
	policy := Policy{PublicKeys: map[string][]byte{"cosign.pub": pub}}

	_, err := Verify(context.Background(), digest, policy,
		remote.WithAuth(&authn.Basic{Username: "user", Password: "wrong-pass"}))
	g.Expect(err).To(MatchError(ContainSubstring("the registry refused the credentials (401 Unauthorized)")))
	g.Expect(err.Error()).NotTo(ContainSubstring("wrong-pass"))
	g.Expect(errors.Is(err, ErrNoSignature)).To(BeFalse())

	_, err = Verify(context.Background(), digest, policy, auth)
	g.Expect(err).To(MatchError(ErrNoSignature))
}

// TestVerifyHonoursTheContext checks that a cancelled context stops Verify.
func TestVerifyHonoursTheContext(t *testing.T) {
	g := NewWithT(t)
	_, pub := generateKeys(t)
	host := testutil.StartRegistry(t, "", "")
	digest := pushImage(t, host, "app")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Verify(ctx, digest, Policy{PublicKeys: map[string][]byte{"cosign.pub": pub}})
	g.Expect(err).To(MatchError(ContainSubstring("context canceled")))
	g.Expect(errors.Is(err, ErrNoSignature)).To(BeFalse())
}
