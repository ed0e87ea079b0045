package helm

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// security-2 risk 7: a HelmRelease's valuesFrom is read as its service
// account. A tenant whose service account may not read a ConfigMap of its
// namespace cannot have it rendered into the release: the release fails
// with the API server's refusal, and nothing is installed; granted the
// right, the same release installs with those values.
func TestValuesFromAreReadAsTheReleasesServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admin-values"},
		Data: map[string]string{"values.yaml": "greeting: from-admin\n"}})).To(Succeed())
	grantRole(g, ns, "deployer", "records", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}})

	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.ServiceAccountName = "deployer"
		hr.Spec.ValuesFrom = []helmv2.ValuesReference{{Kind: "ConfigMap", Name: "admin-values"}}
	})
	key := client.ObjectKeyFromObject(hr)
	got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
		c := conditions.Get(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, `configmaps "admin-values" is forbidden`)
	})
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("system:serviceaccount:" + ns + ":deployer"))
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-cm"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing installed: %v", err)

	grantRole(g, ns, "deployer", "configmaps", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}})
	waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "from-admin"))
}
