package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestFloor: with no controller, the benchmark applies each object of the
// applications once and measures until every Deployment is Current, with
// the control plane's CPU and requests; with -profile, kube-apiserver's
// CPU profile of it.
func TestFloor(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	res, err := Run(context.Background(), nil, Config{N: 3, Controllers: ControllersNone, ProfileDir: dir, ProfileSeconds: 1, Log: io.Discard})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ReadySeconds).To(BeNumerically(">", 0))
	g.Expect(res.Details.ReadyCPU).To(HaveKey("kube-apiserver"))
	g.Expect(res.Details.ReadyServerRequests).To(ContainElements(
		"APPLY deployments=3", "APPLY configmaps=3", "APPLY services=3", "APPLY serviceaccounts=3"))
	profile, err := os.Stat(filepath.Join(dir, "floor-kube-apiserver.pprof"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(profile.Size()).To(BeNumerically(">", 0))
}
