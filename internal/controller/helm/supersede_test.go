package helm

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// slowPod renders, when .Values.slow is set, a Pod that never becomes
// ready: the test control plane runs no pods, so an action waits for it
// until its timeout.
const slowPod = "{{ if .Values.slow }}apiVersion: v1\nkind: Pod\nmetadata:\n  name: slow\nspec:\n  containers:\n  - name: c\n    image: busybox\n{{ end }}"

// TestNewRevisionCancelsTheWait (security.md row 41): an upgrade that
// waits for objects that never become ready, with a ten-minute timeout,
// is cancelled when a new revision arrives, new values or a new chart
// version: the new revision is released at once, the cancelled upgrade
// counts as no failure and is not remediated, and an event says why.
func TestNewRevisionCancelsTheWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		arrive  func(g *WithT, ns string, repo *helmtest.Repo, hr *helmv2.HelmRelease)
		what    string
	}{
		{"values", "1.0.0", func(g *WithT, _ string, _ *helmtest.Repo, hr *helmv2.HelmRelease) {
			hr.Spec.Values = valuesJSON(`{"slow":false,"greeting":"hello"}`)
			g.Expect(env.Client.Update(context.Background(), hr)).To(Succeed())
		}, "generation 3 of the HelmRelease arrived"},
		{"chart", "1.1.0", func(g *WithT, ns string, repo *helmtest.Repo, _ *helmv2.HelmRelease) {
			repo.Add(t, helmtest.Chart(t, "app", "1.1.0"))
			refreshRepository(g, ns, "new-version")
		}, "revision 1.1.0 of HelmChart/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			repo := newRepository(t, g, ns, helmtest.Chart(t, "app", "1.0.0", helmtest.WithTemplate("slow.yaml", slowPod)))
			hr := newRelease(g, ns, "app", "app", func(hr *helmv2.HelmRelease) {
				hr.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
			})
			key := client.ObjectKeyFromObject(hr)
			waitForHR(g, key, hrReady("1.0.0"))

			g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
			hr.Spec.Values = valuesJSON(`{"slow":true}`)
			g.Expect(env.Client.Update(context.Background(), hr)).To(Succeed())
			// The upgrade applied the Pod and waits for it.
			g.Eventually(func() error {
				return env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "slow"}, &corev1.Pod{})
			}, testutil.WaitTimeout).Should(Succeed())

			g.Expect(env.Client.Get(context.Background(), key, hr)).To(Succeed())
			tc.arrive(g, ns, repo, hr)
			got := waitForHR(g, key, func(hr *helmv2.HelmRelease) bool {
				latest := hr.Status.History.Latest()
				return hrReady(tc.version)(hr) && latest.Version == 3
			})
			g.Expect(got.Status.Failures).To(BeZero())
			g.Expect(got.Status.UpgradeFailures).To(BeZero())
			g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(BeNil(), "nothing was rolled back")
			g.Expect(got.Status.History).To(HaveLen(3))
			g.Expect(got.Status.History[1].Status).To(Equal("failed"), "Helm marks the cancelled upgrade failed")
			g.Expect(testutil.EventMessages(g, env.Client, got, helmv2.HelmReleaseKind)).To(ContainElement(
				And(ContainSubstring("Helm upgrade of release "+ns+"/app with chart app@1.0.0 cancelled while it waited"), ContainSubstring(tc.what))))
		})
	}
}

// TestActionsUnderWay: an action is cancelled by a spec that makes another
// release or by another artifact of its source, not by a change that makes
// the same release (the interval, suspend) nor by its own artifact, nor
// once it is done.
func TestActionsUnderWay(t *testing.T) {
	base := func() *helmv2.HelmRelease {
		return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", Generation: 2},
			Spec: helmv2.HelmReleaseSpec{Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "app"}},
				Values: valuesJSON(`{"a":1}`)}}
	}
	source := "HelmChart/apps/apps-app"
	for _, tc := range []struct {
		name   string
		change func(a *actionsUnderWay)
		want   string
	}{
		{"values", func(a *actionsUnderWay) {
			hr := base()
			hr.Generation, hr.Spec.Values = 3, valuesJSON(`{"a":2}`)
			a.releaseChanged(hr)
		}, "generation 3 of the HelmRelease arrived"},
		{"service account", func(a *actionsUnderWay) {
			hr := base()
			hr.Spec.ServiceAccountName = "deployer"
			a.releaseChanged(hr)
		}, "generation 2 of the HelmRelease arrived"},
		{"interval and suspend", func(a *actionsUnderWay) {
			hr := base()
			hr.Spec.Interval, hr.Spec.Suspend = metav1.Duration{Duration: time.Minute}, true
			a.releaseChanged(hr)
		}, ""},
		{"another release", func(a *actionsUnderWay) {
			hr := base()
			hr.Name, hr.Spec.Values = "other", nil
			a.releaseChanged(hr)
		}, ""},
		{"new artifact", func(a *actionsUnderWay) { a.artifactChanged(source, "sha256:new", "1.1.0") },
			"revision 1.1.0 of HelmChart/apps/apps-app arrived"},
		{"same artifact", func(a *actionsUnderWay) { a.artifactChanged(source, "sha256:old", "1.0.0") }, ""},
		{"another source", func(a *actionsUnderWay) { a.artifactChanged("HelmChart/apps/apps-db", "sha256:new", "1.1.0") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var a actionsUnderWay
			ctx, done := a.start(context.Background(), base(), &releaseScope{digest: "sha256:old"})
			tc.change(&a)
			if tc.want == "" {
				g.Expect(ctx.Err()).NotTo(HaveOccurred())
				g.Expect(supersededBy(ctx)).To(BeNil())
			} else {
				g.Expect(supersededBy(ctx)).To(MatchError(tc.want))
			}
			done()
			g.Expect(a.running).To(BeEmpty())
			g.Expect(ctx.Err()).To(HaveOccurred(), "ending it cancels its context")
			if tc.want == "" {
				g.Expect(supersededBy(ctx)).To(BeNil(), "ending it is no supersession")
			} else {
				g.Expect(supersededBy(ctx)).To(MatchError(tc.want), "the supersession stays the cause")
			}
		})
	}
}
