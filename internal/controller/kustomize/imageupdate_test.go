package kustomize

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestAppliedImageUpdate: a revision that image update automation
// committed (its git note travels in the artifact's metadata) is applied
// with an event that says which image it brings, for an Alert to announce.
func TestAppliedImageUpdate(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "app.git", "main")
	sha := repo.MustCommit(t, "main", map[string]string{"deploy/web.yaml": deployment(ns, "web")}, "update web")
	note, err := imageupdate.UpdateNote{Automation: ns + "/fleet", Policies: []imageupdate.NotePolicy{{
		Name: ns + "/web", Image: "ghcr.io/example/web:1.0.0", Previous: "ghcr.io/example/web:0.9.0", Reason: "latest by policy: semver *",
	}}}.Note()
	g.Expect(err).NotTo(HaveOccurred())
	out, err := srv.GitCommand(repo.Path(), "notes", "add", "-m", note, sha).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))

	applyManifests(g, ns, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app}
spec: {interval: 1h, url: %s/app.git, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web}
spec: {interval: 1h, path: ./deploy, prune: true, sourceRef: {kind: GitRepository, name: app}}
`, base))
	ks := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "web"}, ksReady("main@sha1:"+sha))
	g.Expect(testutil.EventMessages(g, env.Client, ks, kustomizev1.KustomizationKind)).To(ContainElement(
		ContainSubstring("revision: main@sha1:" + sha + "\nimage update by ImageUpdateAutomation/" + ns +
			"/fleet: ghcr.io/example/web:0.9.0 -> 1.0.0")))
}
