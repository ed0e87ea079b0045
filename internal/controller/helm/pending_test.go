package helm

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	hcommon "helm.sh/helm/v4/pkg/release/common"
	hrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// setReleaseStatus rewrites a release record in Helm's storage, as a
// process killed in the middle of an action leaves it.
func setReleaseStatus(g *WithT, ns, key string, status hcommon.Status) {
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	d := driver.NewSecrets(cs.CoreV1().Secrets(ns))
	r, err := d.Get(key)
	g.Expect(err).NotTo(HaveOccurred())
	rel := r.(*hrelease.Release)
	rel.Info.Status = status
	g.Expect(d.Update(key, rel)).To(Succeed())
}

// TestPendingReleaseIsRecovered: a release left pending-install by a
// controller killed mid-install (the record says pending, nothing runs it)
// is recovered on the next run without manual cleanup.
func TestPendingReleaseIsRecovered(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "app", "app")
	key := client.ObjectKeyFromObject(hr)
	waitForHR(g, key, hrReady("1.0.0"))

	setReleaseStatus(g, ns, "sh.helm.release.v1.app.v1", hcommon.StatusPendingInstall)
	g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
	hr.Spec.Values = valuesJSON(`{"greeting":"after the crash"}`)
	g.Expect(env.Client.Update(context.Background(), hr)).To(Succeed())
	got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
		return hrReady("1.0.0")(hr) && hr.Status.ObservedGeneration == hr.Generation && hr.Status.History.Latest().Status == "deployed" &&
			hr.Status.LastAttemptedConfigDigest == hr.Status.History.Latest().ConfigDigest
	})
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "after the crash"))
	g.Expect(got.Status.History.Latest().Version).To(BeNumerically(">=", 1))
}

// TestValuesFrom: values come from a ConfigMap and a Secret (one value
// at a target path), merged before spec.values; a missing ConfigMap is
// waited for.
func TestValuesFrom(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0", helmtest.WithTemplate("more.yaml",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-more\ndata:\n  color: {{ .Values.color | quote }}\n  token: {{ .Values.auth.token | quote }}\n")))
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.ValuesFrom = []helmv2.ValuesReference{
			{Kind: "ConfigMap", Name: "app-values"},
			{Kind: "Secret", Name: "app-secret", ValuesKey: "token", TargetPath: "auth.token"},
		}
		hr.Spec.Values = valuesJSON(`{"color":"blue"}`)
	})
	key := client.ObjectKeyFromObject(hr)
	waitForHR(g, key, hrReason(meta.ReadyCondition, "False", helmv2.InitFailedReason))

	g.Expect(env.Client.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-values"},
		Data: map[string]string{"values.yaml": "greeting: from-configmap\ncolor: red\n"}})).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-secret"},
		StringData: map[string]string{"token": "s3cr3t,with=commas"}})).To(Succeed())
	waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "from-configmap"))
	more := configMap(g, ns, "app-more").Data
	g.Expect(more).To(HaveKeyWithValue("color", "blue"), "spec.values come last")
	g.Expect(more).To(HaveKeyWithValue("token", "s3cr3t,with=commas"))
}

// TestDependsOnKustomization: a release waits for a Kustomization it
// names by kind, and goes ahead as soon as it is Ready.
func TestDependsOnKustomization(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crds"},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: 1e12}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "none"}},
	}
	g.Expect(env.Client.Create(context.Background(), ks)).To(Succeed())
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.DependsOn = []meta.DependencyReference{{Kind: kustomizev1.KustomizationKind, Name: "crds"}}
		hr.Spec.Interval = metav1.Duration{Duration: 1e12}
	})
	key := client.ObjectKeyFromObject(hr)
	got := waitForHR(g, key, hrReason(meta.ReadyCondition, "False", meta.DependencyNotReadyReason))
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("Kustomization/" + ns + "/crds"))

	// No Kustomization controller runs here: the test makes it Ready.
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	ks.Status.ObservedGeneration = ks.Generation
	conditions.MarkTrue(ks, meta.ReadyCondition, meta.SucceededReason, "applied")
	g.Expect(env.Client.Status().Update(context.Background(), ks)).To(Succeed())
	waitForHR(g, key, hrReady("1.0.0"))
	_ = testutil.WaitTimeout
}
