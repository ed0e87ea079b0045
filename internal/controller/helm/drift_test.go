package helm

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// TestDriftIsCorrected: with drift detection enabled, a field changed by
// someone else is set back and a deleted object is created again; in warn
// mode the drift is only reported. A change is seen by the first run after
// the watch of versions saw it (reconcileUntil).
func TestDriftIsCorrected(t *testing.T) {
	g := NewWithT(t)
	ns, hr, got := deployedWithDriftDetection(t, g)
	key := client.ObjectKeyFromObject(hr)
	g.Expect(conditions.Get(got, helmv2.DriftedCondition).Reason).To(Equal(helmv2.NoDriftDetectedReason))

	cm := configMap(g, ns, "app-cm")
	cm.Data["greeting"] = "changed by hand"
	g.Expect(env.Client.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	drift := driftCorrected()
	got = reconcileUntil(g, hr, "edited", func(hr *helmv2.HelmRelease) bool {
		return conditions.Reason(hr, helmv2.DriftedCondition) == helmv2.DriftCorrectedReason
	})
	g.Expect(driftCorrected()).To(BeNumerically(">=", drift+1), "the changed object counts as drift corrected")
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(got.Status.History).To(HaveLen(1), "a correction is no upgrade")

	g.Expect(env.Client.Delete(context.Background(), cm)).To(Succeed())
	drift = driftCorrected()
	reconcileUntil(g, hr, "deleted", func(*helmv2.HelmRelease) bool { return driftCorrected() >= drift+1 })
	g.Expect(configMap(g, ns, "app-cm").Data).To(HaveKeyWithValue("greeting", "hello"))

	// Warn only reports.
	g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
	hr.Spec.DriftDetection.Mode = helmv2.DriftDetectionWarn
	g.Expect(env.Client.Update(context.Background(), hr)).To(Succeed())
	waitForHR(g, key, hrReady("1.0.0"))
	g.Expect(env.Client.Delete(context.Background(), configMap(g, ns, "app-cm"))).To(Succeed())
	got = reconcileUntil(g, hr, "warned", func(hr *helmv2.HelmRelease) bool { return conditions.IsTrue(hr, helmv2.DriftedCondition) })
	g.Expect(conditions.Get(got, helmv2.DriftedCondition).Message).To(ContainSubstring("app-cm"))
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app-cm"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "warn corrects nothing")
}
