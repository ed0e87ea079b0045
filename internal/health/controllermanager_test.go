package health

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestControllerManager checks that testenv's kube-controller-manager
// writes the status of Deployments: one scaled to zero becomes Available,
// one with a replica gets a ReplicaSet but never becomes available.
func TestControllerManager(t *testing.T) {
	t.Logf("kube-controller-manager acted %s after it was started", controllerManagerStartup.Round(time.Millisecond))
	ns := env.CreateNamespace(t)
	createDeployment(t, ns, "zero", 0)
	createDeployment(t, ns, "one", 1)

	t.Run("scaled to zero", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			d := getDeployment(g, ns, "zero")
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
			g.Expect(d.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.DeploymentAvailable),
				HaveField("Status", corev1.ConditionTrue),
			)))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})

	t.Run("one replica", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			d := getDeployment(g, ns, "one")
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
			var sets appsv1.ReplicaSetList
			g.Expect(env.Client.List(context.Background(), &sets, client.InNamespace(ns),
				client.MatchingLabels{"app": "one"})).To(Succeed())
			g.Expect(sets.Items).To(HaveLen(1))
			g.Expect(d.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.DeploymentAvailable),
				HaveField("Status", corev1.ConditionFalse),
			)))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		g.Expect(getDeployment(g, ns, "one").Status.AvailableReplicas).To(BeZero())
	})
}
