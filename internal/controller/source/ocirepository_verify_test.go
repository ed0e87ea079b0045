package source

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// TestOCIRepositoryVerifiesCosignSignatures signs artifacts with the real
// cosign CLI, as a v3 bundle and as a legacy .sig tag: a signed artifact
// is stored with SourceVerified=True; an unsigned one, or one signed with
// another key, is not stored, and SourceVerified=False says why.
func TestOCIRepositoryVerifiesCosignSignatures(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startCountingRegistry(t)
	keys, pub := testservers.GenerateKeyPair(t)
	otherKeys, _ := testservers.GenerateKeyPair(t)
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cosign-pub"},
		Data:       map[string][]byte{"cosign.pub": pub},
	})).To(Succeed())

	for _, tc := range []struct {
		name   string
		signer string
		legacy bool
		ok     bool
		msg    string
	}{
		{name: "bundle", signer: keys, ok: true},
		{name: "legacy", signer: keys, legacy: true, ok: true},
		{name: "unsigned", msg: "no cosign signature found"},
		{name: "other-key", signer: otherKeys, msg: "cosign.pub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pushed := push(t, g, reg.host, tc.name+":v1", map[string]string{"a.yaml": "a: 1\n"}, "")
			if tc.signer != "" {
				testservers.SignWithKey(t, tc.signer, reg.host+"/"+tc.name+"@"+pushed.Digest.String(), tc.legacy)
			}
			obj := newOCIRepository(ns, tc.name, "oci://"+reg.host+"/"+tc.name)
			obj.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
			obj.Spec.Verify = &sourcev1.OCIRepositoryVerification{
				Provider: sourcev1.VerificationProviderCosign, SecretRef: &meta.LocalObjectReference{Name: "cosign-pub"},
			}
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			if tc.ok {
				got := waitForOCI(g, obj, ociReadyAt("v1@"+pushed.Digest.String()))
				g.Expect(conditions.IsTrue(got, sourcev1.SourceVerifiedCondition)).To(BeTrue())
				g.Expect(conditions.Message(got, sourcev1.SourceVerifiedCondition)).To(ContainSubstring("cosign.pub"))
				return
			}
			got := waitForOCI(g, obj, ociCondition(sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.VerificationErrorReason))
			g.Expect(conditions.Message(got, sourcev1.SourceVerifiedCondition)).To(ContainSubstring(tc.msg))
			g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
			g.Expect(got.Status.Artifact).To(BeNil(), "an unverified artifact is never stored")
			g.Expect(testutil.WarningReasons(g, env.Client, got, sourcev1.OCIRepositoryKind)).To(ContainElement(sourcev1.VerificationErrorReason))
		})
	}
}

// TestOCIRepositoryCredentialsAndTLS pulls from the distribution registry
// with basic auth and a private CA, through a dockerconfigjson Secret (or
// a service account's imagePullSecrets) and a certSecretRef. A wrong
// password fails as AuthenticationFailed and shows up in no condition,
// event or log (security.md row 19).
func TestOCIRepositoryCredentialsAndTLS(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const password = "S3cretRegistryPassw0rd"
	reg := testservers.StartRegistry(t, testservers.RegistryOptions{Username: "robot", Password: password, TLS: true})
	pushTLS(t, g, reg, "app:v1", map[string]string{"a.yaml": "a: 1\n"})

	create := func(obj client.Object) { g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed()) }
	create(dockerConfigSecret(ns, "pull", reg.Host, "robot", password))
	create(dockerConfigSecret(ns, "wrong", reg.Host, "robot", "Wr0ng"+password))
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca"}, Data: map[string][]byte{"ca.crt": reg.CAPEM}})
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "puller"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}})

	newRepo := func(name string) *sourcev1.OCIRepository {
		obj := newOCIRepository(ns, name, "oci://"+reg.Host+"/app")
		obj.Spec.Insecure = false
		obj.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "v1"}
		obj.Spec.CertSecretRef = &meta.LocalObjectReference{Name: "ca"}
		return obj
	}
	withSecret := newRepo("with-secret")
	withSecret.Spec.SecretRef = &meta.LocalObjectReference{Name: "pull"}
	create(withSecret)
	withAccount := newRepo("with-account")
	withAccount.Spec.ServiceAccountName = "puller"
	create(withAccount)
	waitForOCI(g, withSecret, ociReadyAt(""))
	waitForOCI(g, withAccount, ociReadyAt(""))

	noCA := newRepo("no-ca")
	noCA.Spec.SecretRef = &meta.LocalObjectReference{Name: "pull"}
	noCA.Spec.CertSecretRef = nil
	create(noCA)
	untrusted := waitForOCI(g, noCA, ociCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.OCIPullFailedReason))
	g.Expect(conditions.Message(untrusted, sourcev1.FetchFailedCondition)).To(ContainSubstring("certificate"))

	wrong := newRepo("wrong-password")
	wrong.Spec.SecretRef = &meta.LocalObjectReference{Name: "wrong"}
	create(wrong)
	denied := waitForOCI(g, wrong, ociCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, sourcev1.AuthenticationFailedReason))
	for _, c := range denied.Status.Conditions {
		g.Expect(c.Message).NotTo(ContainSubstring(password))
	}
	for _, m := range testutil.EventMessages(g, env.Client, denied, sourcev1.OCIRepositoryKind) {
		g.Expect(m).NotTo(ContainSubstring(password))
	}
	g.Expect(logs.Contains(password)).To(BeFalse(), "a registry password is in the logs")
}

// dockerConfigSecret returns a kubernetes.io/dockerconfigjson Secret with
// credentials for host.
func dockerConfigSecret(ns, name, host, user, password string) *corev1.Secret {
	config, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
	}}})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: config},
	}
}
