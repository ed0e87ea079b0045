package testenv

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/discovery"

	"github.com/windlass-dev/windlass/internal/controlplane"
)

// The control plane reports the Kubernetes version it is built from, not
// the v0.0.0-master of an unstamped build: charts that require a
// kubeVersion (most public ones, ">=1.23.0-0") install on it.
func TestAPIServerReportsItsRealVersion(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	v, err := dc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.GitVersion).To(Equal(controlplane.KubernetesVersion))
	g.Expect(v.Major + "." + v.Minor).To(Equal("1.36"))
}
