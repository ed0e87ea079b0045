package helm

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// badTemplate renders an object the API server refuses.
const badTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\ndata: {}\n"

// TestFailedUpgradeRollsBack: an upgrade that fails is rolled back to the
// last good release while retries remain, then the release stalls with
// the last good release deployed; a new chart version starts afresh.
func TestFailedUpgradeRollsBack(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo := newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: 1}}
	})
	key := client.ObjectKeyFromObject(hr)
	waitForHR(g, key, hrReady("1.0.0"))

	upgrades, rollbacks := helmActionsOf(helmv2.ReleaseActionUpgrade), helmActionsOf(actionRollback)
	repo.Add(t, helmtest.Chart(t, "app", "2.0.0", helmtest.WithTemplate("bad.yaml", badTemplate)))
	refreshRepository(g, ns, "bad-version")
	got := waitForHR(g, key, hrReason(meta.ReadyCondition, "False", helmv2.RetriesExceededReason))
	g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeTrue())
	g.Expect(got.Status.UpgradeFailures).To(BeEquivalentTo(2))
	g.Expect(helmActionsOf(helmv2.ReleaseActionUpgrade).failures).To(BeNumerically(">=", upgrades.failures+2), "each failed upgrade counts")
	g.Expect(helmActionsOf(actionRollback).samples).To(BeNumerically(">", rollbacks.samples), "the rollback's duration is observed")
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("2.0.0"))
	rem := conditions.Get(got, helmv2.RemediatedCondition)
	g.Expect(rem).NotTo(BeNil())
	g.Expect(rem.Reason).To(Equal(helmv2.RollbackSucceededReason))
	released := conditions.Get(got, helmv2.ReleasedCondition)
	g.Expect(released.Reason).To(Equal(helmv2.UpgradeFailedReason))
	g.Expect(released.Message).To(ContainSubstring("Not_A_Valid_Name"))
	latest := got.Status.History.Latest()
	g.Expect(latest.Status).To(Equal("deployed"))
	g.Expect(latest.ChartVersion).To(Equal("1.0.0"))
	configMap(g, ns, "app-cm")
	g.Expect(testutil.EventMessages(g, env.Client, got, helmv2.HelmReleaseKind)).To(ContainElement(ContainSubstring("Helm rollback")))

	// Stalled: nothing is retried until something changes...
	testutil.RequestReconcile(g, env.Client, hr, "still-stalled")
	got = waitForHR(g, key, func(hr *helmv2.HelmRelease) bool { return hr.Status.LastHandledReconcileAt == "still-stalled" })
	g.Expect(got.Status.UpgradeFailures).To(BeEquivalentTo(2))
	// ...and a good chart version upgrades.
	repo.Add(t, helmtest.Chart(t, "app", "2.0.1"))
	refreshRepository(g, ns, "fixed-version")
	got = waitForHR(g, key, hrReady("2.0.1"))
	g.Expect(got.Status.UpgradeFailures).To(BeZero())
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(BeNil())
}

// TestFailedInstallIsUninstalledAndRetried: an install that fails with
// retries left is uninstalled and tried again; without retries it stalls
// with nothing left pending, and the fixed values install it.
func TestFailedInstallIsUninstalledAndRetried(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0", helmtest.WithTemplate("maybe-bad.yaml",
		"{{ if .Values.bad }}"+badTemplate+"{{ end }}")))
	installs, uninstalls := helmActionsOf(helmv2.ReleaseActionInstall), helmActionsOf(actionUninstall)
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.Values = valuesJSON(`{"bad":true}`)
		hr.Spec.Install = &helmv2.Install{Remediation: &helmv2.InstallRemediation{Retries: 2}}
	})
	key := client.ObjectKeyFromObject(hr)
	got := waitForHR(g, key, hrReason(meta.ReadyCondition, "False", helmv2.RetriesExceededReason))
	g.Expect(got.Status.InstallFailures).To(BeEquivalentTo(3))
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition).Reason).To(Equal(helmv2.UninstallSucceededReason))
	now := helmActionsOf(helmv2.ReleaseActionInstall)
	g.Expect(now.failures).To(BeNumerically(">=", installs.failures+3), "each failed install counts")
	g.Expect(now.samples).To(BeNumerically(">=", installs.samples+3), "with its duration")
	g.Expect(helmActionsOf(actionUninstall).samples).To(BeNumerically(">", uninstalls.samples), "the remediation's uninstall is observed")
	var secrets corev1.SecretList
	g.Expect(env.Client.List(context.Background(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty(), "the failed install was uninstalled")

	g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
	hr.Spec.Values = valuesJSON(`{"bad":false}`)
	g.Expect(env.Client.Update(context.Background(), hr)).To(Succeed())
	got = waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(got.Status.InstallFailures).To(BeZero())
}

// TestFailingTestHookDrivesRemediation: the test control plane runs no
// pods, so a test hook never completes and the test times out: the
// release is remediated as a failed install, and the hook's Pod was
// created by the test action.
func TestFailingTestHookDrivesRemediation(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	hook := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations:\n    helm.sh/hook: test\n" +
		"spec:\n  restartPolicy: Never\n  containers:\n  - name: t\n    image: busybox\n"
	newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0", helmtest.WithTemplate("tests/pod.yaml", hook)))
	tests := helmActionsOf(actionTest)
	hr := newRelease(g, ns, "tested", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.Test = &helmv2.Test{Enable: true, Timeout: &metav1.Duration{Duration: 2 * time.Second}}
		hr.Spec.Install = &helmv2.Install{Remediation: &helmv2.InstallRemediation{RemediateLastFailure: ptr.To(true)}}
	})
	key := client.ObjectKeyFromObject(hr)
	got := waitForHR(g, key, hrReason(meta.ReadyCondition, "False", helmv2.RetriesExceededReason))
	g.Expect(conditions.Get(got, helmv2.TestSuccessCondition).Reason).To(Equal(helmv2.TestFailedReason))
	g.Expect(got.Status.InstallFailures).To(BeEquivalentTo(1))
	g.Expect(helmActionsOf(actionTest).failures).To(BeNumerically(">", tests.failures), "the failed test counts")
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition).Reason).To(Equal(helmv2.UninstallSucceededReason))
	events := testutil.EventMessages(g, env.Client, got, helmv2.HelmReleaseKind)
	g.Expect(events).To(ContainElement(ContainSubstring("Helm test failed")))
	g.Expect(events).To(ContainElement(ContainSubstring("Helm install succeeded")))
}

// TestRetryOnFailureRetriesWithoutRemediation: an upgrade whose strategy
// is RetryOnFailure is tried again at its retry interval for as long as it
// fails, even with no remediation retries: it is neither rolled back nor
// stalled, and a fixed chart version upgrades.
func TestRetryOnFailureRetriesWithoutRemediation(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	repo := newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0"))
	hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
		hr.Spec.Upgrade = &helmv2.Upgrade{Strategy: &helmv2.ActionStrategy{
			Name: helmv2.ActionStrategyRetryOnFailure, RetryInterval: &metav1.Duration{Duration: time.Second},
		}}
	})
	key := client.ObjectKeyFromObject(hr)
	waitForHR(g, key, hrReady("1.0.0"))

	repo.Add(t, helmtest.Chart(t, "app", "2.0.0", helmtest.WithTemplate("bad.yaml", badTemplate)))
	refreshRepository(g, ns, "bad-version")
	got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool { return hr.Status.UpgradeFailures >= 3 })
	g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeFalse(), "RetryOnFailure never runs out of retries")
	g.Expect(conditions.Get(got, meta.ReadyCondition).Reason).To(Equal(helmv2.UpgradeFailedReason))
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(BeNil(), "a failure is retried, not remediated")
	g.Expect(got.Status.History.Latest().Status).To(Equal("failed"))
	g.Eventually(func(g Gomega) []string {
		return testutil.WarningReasons(g, env.Client, got, helmv2.HelmReleaseKind)
	}, testutil.WaitTimeout).Should(ContainElement(helmv2.UpgradeFailedReason), "each failed try is a Warning event")
	configMap(g, ns, "app-cm")

	repo.Add(t, helmtest.Chart(t, "app", "2.0.1"))
	refreshRepository(g, ns, "fixed-version")
	got = waitForHR(g, key, hrReady("2.0.1"))
	g.Expect(got.Status.UpgradeFailures).To(BeZero())
}
