package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	imagev1beta2 "github.com/windlass-dev/windlass/api/image/v1beta2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// Security reference row 37 for image automation: the controller is
// killed (SIGKILL) after its push reached the server and before it heard
// back, so before it could write its status (the server's post-receive
// hook holds the answer). A new controller on the same shard converges
// without a second commit: the branch holds exactly one update commit,
// with its note, and the automation is Ready.
func TestImageAutomation_KilledAfterThePushConverges(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const shard = "iua-kill"
	registry := testutil.StartRegistry(t, "", "")
	image := registry + "/podinfo"
	testutil.PushImage(t, image, []string{"6.0.0", "6.1.0"})

	srv := gitserver.NewForTest(t)
	repo := srv.MustInitRepo(t, "fleet.git", "main")
	initial := repo.MustCommit(t, "main", map[string]string{"apps/podinfo.yaml": fmt.Sprintf(
		"image: %s:6.0.0 # {\"$imagepolicy\": \"%s:podinfo\"}\n", image, ns)}, "podinfo")
	url := srv.MustStartHTTP(t) + "/fleet.git"
	marks := t.TempDir()
	pushed, release := filepath.Join(marks, "pushed"), filepath.Join(marks, "release")
	g.Expect(repo.SetHook("post-receive", fmt.Sprintf("#!/bin/sh\ntouch %q\nwhile [ ! -e %q ]; do sleep 0.05; done\n", pushed, release))).To(Succeed())
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })

	storage := t.TempDir()
	first := startShardController(t, g, shard, storage)
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "fleet", url))
	createSharded(g, shard, &imagev1.ImageRepository{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: podinfo, namespace: %s}
spec: {image: %s, interval: 1m, insecure: true}
`, ns, image))
	createSharded(g, shard, &imagev1beta2.ImagePolicy{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata: {name: podinfo, namespace: %s}
spec: {imageRepositoryRef: {name: podinfo}, policy: {semver: {range: 6.x}}}
`, ns))
	automation := createSharded(g, shard, &imagev1.ImageUpdateAutomation{}, fmt.Sprintf(`
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: fleet, namespace: %s}
spec:
  interval: 1m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit: {author: {name: windlass, email: bot@example.com}}
    push: {branch: main}
  update: {strategy: Setters, path: ./apps}
`, ns))

	g.Eventually(func() error { _, err := os.Stat(pushed); return err }, timeout, interval).Should(Succeed(), "the push reached the server")
	first.Kill()
	var killed imagev1.ImageUpdateAutomation
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(automation), &killed)).To(Succeed())
	g.Expect(killed.Status.LastPushCommit).To(BeEmpty(), "killed before its status named the push")
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).NotTo(Equal(initial), "the push landed")
	g.Expect(os.WriteFile(release, nil, 0o644)).To(Succeed())

	startShardController(t, g, shard, storage)
	testutil.RequestReconcile(g, env.Client, automation, "after-the-kill")
	g.Eventually(func(g Gomega) {
		var a imagev1.ImageUpdateAutomation
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(automation), &a)).To(Succeed())
		g.Expect(a.Status.LastHandledReconcileAt).To(Equal("after-the-kill"))
		g.Expect(conditions.IsTrue(&a, meta.ReadyCondition)).To(BeTrue(), conditions.Message(&a, meta.ReadyCondition))
	}, timeout, interval).Should(Succeed())

	log := strings.Fields(show(g, srv, repo, "rev-list", initial+"..main"))
	g.Expect(log).To(Equal([]string{head}), "one update commit, not two")
	g.Expect(show(g, srv, repo, "show", "main:apps/podinfo.yaml")).To(ContainSubstring(image + ":6.1.0"))
	g.Expect(show(g, srv, repo, "notes", "show", head)).To(ContainSubstring(ns+"/podinfo"), "the commit has its note")
}

// show returns the output of git in repo's bare repository.
func show(g *WithT, srv *gitserver.Server, repo *gitserver.Repo, args ...string) string {
	out, err := srv.GitCommand(repo.Path(), args...).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
	return string(out)
}
