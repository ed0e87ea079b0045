package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProtectedLabel marks the ConfigMaps that DenyProtectedDeletes protects.
const ProtectedLabel = "windlass.test/protected"

// deniedMessage is how the API server refuses to delete a protected object.
const deniedMessage = "deletion of protected objects is not allowed"

// DenyProtectedDeletes installs a ValidatingAdmissionPolicy that refuses to
// delete the ConfigMaps of namespace ns labelled ProtectedLabel, with the
// message "deletion of protected objects is not allowed", and waits until
// the API server enforces it. It returns a function that removes the
// policy, which also runs when the test ends.
func (e *Environment) DenyProtectedDeletes(t testing.TB, ns string) (allow func()) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-protect"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(oldObject.metadata.labels) || !('" + ProtectedLabel + "' in oldObject.metadata.labels)",
				Message:    deniedMessage,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-protect"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	allow = func() {
		_ = e.Client.Delete(ctx, binding)
		_ = e.Client.Delete(ctx, policy)
	}
	t.Cleanup(allow)

	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "protection-probe", Namespace: ns, Labels: map[string]string{ProtectedLabel: "true"},
	}}
	if err := e.Client.Create(ctx, probe); err != nil {
		t.Fatalf("creating the probe: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := e.Client.Delete(ctx, probe, client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), deniedMessage) {
			return allow
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deny-delete policy of %s is not enforced after a minute (last answer: %v)", ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
