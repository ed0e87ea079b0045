package main

import (
	"context"
	"io"
	"testing"

	. "github.com/onsi/gomega"
)

// TestFloor: with no controller, the benchmark applies each object of the
// applications once and measures until every Deployment is Current, with
// the control plane's CPU and requests.
func TestFloor(t *testing.T) {
	g := NewWithT(t)
	res, err := Run(context.Background(), nil, Config{N: 3, Controllers: ControllersNone, Log: io.Discard})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ReadySeconds).To(BeNumerically(">", 0))
	g.Expect(res.Details.ReadyCPU).To(HaveKey("kube-apiserver"))
	g.Expect(res.Details.ReadyServerRequests).To(ContainElements(
		"APPLY deployments=3", "APPLY configmaps=3", "APPLY services=3", "APPLY serviceaccounts=3"))
}
