package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// TestBootstrapGit: `windlass bootstrap git` commits the components and
// the sync to an empty repository (over HTTP with basic auth), applies
// them, and returns once the controller has reconciled the committed sync
// from that repository; running it again commits nothing. It runs on a
// control plane of its own: the sync prunes what it applied, the CRDs
// included, when it goes.
func TestBootstrapGit(t *testing.T) {
	g := NewWithT(t)
	_, kc := privateControlPlane(t, g)
	startPrivateController(t, g, kc)
	srv := gitserver.NewForTest(t)
	srv.SetBasicAuth("bot", "b00tstrap-s3cret")
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "fleet.git", "main")

	bootstrap := func() string {
		cmd := exec.Command(windlassBin, "bootstrap", "git", "--url", base+"/fleet.git", "-u", "bot", "-p", "b00tstrap-s3cret",
			"--path", "clusters/test", "--kubeconfig", kc, "--timeout", "2m")
		cmd.Env = childproc.CleanEnv()
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		g.Expect(string(out)).NotTo(ContainSubstring("b00tstrap-s3cret"))
		return string(out)
	}
	out := bootstrap()
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("✔ committed and pushed " + head[:12] + " to main/clusters/test/flux-system"))
	g.Expect(out).To(ContainSubstring("✔ Kustomization flux-system/flux-system reconciled: Applied revision: main@sha1:" + head))
	files, err := srv.GitCommand(repo.Path(), "ls-tree", "-r", "--name-only", "main").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(string(files))).To(ConsistOf("clusters/test/flux-system/gotk-components.yaml",
		"clusters/test/flux-system/gotk-sync.yaml", "clusters/test/flux-system/kustomization.yaml"))

	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	var ks kustomizev1.Kustomization
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, &ks)).To(Succeed())
	g.Expect(ks.Status.LastAppliedRevision).To(Equal("main@sha1:" + head))
	g.Expect(ks.Status.Inventory.Entries).To(ContainElement(HaveField("ID", "flux-system_windlass_apps_Deployment")),
		"the sync applies the controller's own Deployment")
	components, err := srv.GitCommand(repo.Path(), "show", "main:clusters/test/flux-system/gotk-components.yaml").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(components)).To(ContainSubstring("image: ghcr.io/windlass-dev/windlass:latest"), "a development client installs latest")

	out = bootstrap()
	g.Expect(out).To(ContainSubstring("✔ main/clusters/test/flux-system is up to date at " + head[:12]))
	again, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(head), "running it again commits nothing")
}
