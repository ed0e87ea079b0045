package source

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/cosign"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// trustedRootKey is the key of the Secret of
// spec.verify.trustedRootSecretRef.
const trustedRootKey = "trusted_root.json"

// cosignPolicy builds the verification policy of spec.verify from its
// Secrets: the public keys (*.pub entries of secretRef), or the keyless
// identities and the trusted root they chain to. A Secret that does not
// exist yet fails and is retried; what can never verify stalls.
func (r *OCIRepositoryReconciler) cosignPolicy(ctx context.Context, obj *sourcev1.OCIRepository) (cosign.Policy, error) {
	v := obj.Spec.Verify
	stall := func(format string, args ...any) error {
		err := outcome.Stall(sourcev1.VerificationErrorReason, fmt.Errorf(format, args...))
		markVerificationFailed(obj, err)
		return err
	}
	var p cosign.Policy
	if v.SecretRef != nil {
		data, err := secretData(ctx, r.Client, obj.Namespace, v.SecretRef.Name)
		if err != nil {
			err = outcome.Fail(sourcev1.VerificationErrorReason, err)
			markVerificationFailed(obj, err)
			return p, err
		}
		p.PublicKeys = publicKeys(data)
		if len(p.PublicKeys) == 0 {
			return p, stall("secret '%s' of spec.verify has no public key: add a '<name>.pub' entry", v.SecretRef.Name)
		}
		return p, nil
	}
	if v.TrustedRootSecretRef == nil {
		return p, stall("keyless verification needs spec.verify.trustedRootSecretRef, a Secret with %s (the Sigstore trusted root); or give a public key with spec.verify.secretRef", trustedRootKey)
	}
	data, err := secretData(ctx, r.Client, obj.Namespace, v.TrustedRootSecretRef.Name)
	if err != nil {
		err = outcome.Fail(sourcev1.VerificationErrorReason, err)
		markVerificationFailed(obj, err)
		return p, err
	}
	if p.TrustedRoot = data[trustedRootKey]; len(p.TrustedRoot) == 0 {
		return p, stall("secret '%s' of spec.verify.trustedRootSecretRef has no '%s'", v.TrustedRootSecretRef.Name, trustedRootKey)
	}
	for _, id := range v.MatchOIDCIdentity {
		for _, re := range []string{id.Issuer, id.Subject} {
			if _, err := regexp.Compile(re); err != nil {
				return p, stall("invalid regular expression '%s' in spec.verify.matchOIDCIdentity: %v", re, err)
			}
		}
		p.Identities = append(p.Identities, cosign.Identity{Issuer: id.Issuer, Subject: id.Subject})
	}
	return p, nil
}

// publicKeys returns the *.pub entries of a Secret.
func publicKeys(data map[string][]byte) map[string][]byte {
	keys := map[string][]byte{}
	for k, v := range data {
		if strings.HasSuffix(k, ".pub") {
			keys[k] = v
		}
	}
	return keys
}

// markVerificationFailed says SourceVerified=False with err.
func markVerificationFailed(obj *sourcev1.OCIRepository, err error) {
	conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "%s", err.Error())
}

// cosignVerify verifies the signature of digest with the registry options
// of the run.
func cosignVerify(ctx context.Context, digest name.Digest, p cosign.Policy, o oci.Options) (cosign.Result, error) {
	return cosign.Verify(ctx, digest, p, o.RemoteOptions(ctx)...)
}
