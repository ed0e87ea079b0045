package release

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// canary is the value of the Secret the tests' charts render: it must
// show in no error.
const canary = "canary-s3cr3t-value-7f1c"

// secretTemplate renders a Secret holding the canary in data (encoded)
// and in stringData.
const secretTemplate = `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-credentials
data:
  token: {{ .Values.token | b64enc }}
stringData:
  password: {{ .Values.token }}-plain
`

// TestWithoutSecrets: the values of the Secrets of a release's manifest
// and hooks, encoded and decoded, are replaced in an error, which still
// wraps its cause; an error without them is returned as it is.
func TestWithoutSecrets(t *testing.T) {
	g := NewWithT(t)
	encoded := base64.StdEncoding.EncodeToString([]byte(canary))
	rel := &releasev1.Release{
		Manifest: "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  greeting: hello-world\n" +
			"---\n# Source: app/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  token: " + encoded + "\n",
		Hooks: []*releasev1.Hook{{Manifest: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: h\nstringData:\n  key: hook-only-secret\n"}},
	}
	cause := errors.New("sentinel")
	err := withoutSecrets(errors.Join(cause, errors.New("denied: token "+canary+" ("+encoded+"), hook-only-secret, greeting hello-world")), rel)
	g.Expect(err.Error()).NotTo(ContainSubstring(canary))
	g.Expect(err.Error()).NotTo(ContainSubstring(encoded))
	g.Expect(err.Error()).NotTo(ContainSubstring("hook-only-secret"))
	g.Expect(err.Error()).To(ContainSubstring("greeting hello-world"), "a ConfigMap's data is not secret")
	g.Expect(err.Error()).To(ContainSubstring("[redacted]"))
	g.Expect(errors.Is(err, cause)).To(BeTrue())

	plain := errors.New("nothing secret here")
	g.Expect(withoutSecrets(plain, rel)).To(BeIdenticalTo(plain))
	g.Expect(withoutSecrets(nil, rel)).To(Succeed())
	g.Expect(withoutSecrets(plain, nil)).To(BeIdenticalTo(plain))
	g.Expect(withoutSecrets(plain, &releasev1.Release{Manifest: "kind: Secret\n: not yaml ["})).To(BeIdenticalTo(plain))
}

// TestRefusedSecretIsNotQuoted is security.md row 20 on a HelmRelease's
// action: an admission policy of the cluster refuses the chart's Secret
// with a message that quotes its data; the install's error, which becomes
// the HelmRelease's condition and event, names the refusal and holds
// neither the value nor its encoding.
func TestRefusedSecretIsNotQuoted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	refuseSecretsQuotingThem(t, g, f.target)
	ch := helmtest.Chart(t, "leaky", "1.0.0", helmtest.WithoutTemplates(), helmtest.WithTemplate("secret.yaml", secretTemplate))

	_, err := f.runner.Install(ctx, ch, map[string]any{"token": canary}, InstallOptions{ReleaseName: "leaky", Namespace: f.target, ServerSideApply: true})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("refused by the test's policy"), "the refusal is named")
	for _, v := range []string{canary, base64.StdEncoding.EncodeToString([]byte(canary))} {
		g.Expect(err.Error()).NotTo(ContainSubstring(v))
	}
	g.Expect(err.Error()).To(ContainSubstring("[redacted]"), "the policy did quote it: the test would pass vacuously otherwise")
}

// refuseSecretsQuotingThem makes the API server refuse every Secret
// created in ns with a message that quotes its data's token, as a careless
// admission policy would.
func refuseSecretsQuotingThem(t *testing.T, g *WithT, ns string) {
	ctx := context.Background()
	fail := admissionv1.Deny
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{GenerateName: "quote-secrets-"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}}}}}},
			Validations: []admissionv1.Validation{{Expression: "!has(object.data) || !('token' in object.data)",
				MessageExpression: "'refused by the test\\'s policy: token ' + string(object.data.token)"}},
		}}
	g.Expect(env.Client.Create(ctx, policy)).To(Succeed())
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name, ValidationActions: []admissionv1.ValidationAction{fail},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}}}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, policy)
	})
	// The API server reads policies from its cache: wait until it refuses.
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Data: map[string][]byte{"token": []byte("probe")}}
	g.Eventually(func() error {
		return env.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
	}, 30*time.Second, 100*time.Millisecond).Should(MatchError(ContainSubstring("refused by the test's policy")))
}

func ptr[T any](v T) *T { return &v }
