package kustomize

import (
	"context"
	"io"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// uiAddr is where the suite's manager serves the web UI (main_test.go).
var uiAddr string

// secretManifest is a Secret with one password.
func secretManifest(ns, name, password string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\nstringData:\n  password: " + password + "\n"
}

// TestPreviewShowsWhatTheNextRevisionWouldChange: while a Kustomization is
// suspended, its source moves on; the web UI's preview builds the new
// revision and dry-runs it as the controller would: a changed value shows
// in a diff, a changed Secret value is masked, a new object is created, a
// removed one deleted by the prune. Nothing is written. A revision that
// does not build says why.
func TestPreviewShowsWhatTheNextRevisionWouldChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	repo, src := appRepo(t, "app", map[string]string{
		"deploy/settings.yaml": configMap(ns, "settings", "1"),
		"deploy/old.yaml":      configMap(ns, "old", "1"),
		"deploy/creds.yaml":    secretManifest(ns, "creds", "hunter2"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, kustomization("app", "app", "  path: ./deploy\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	waitForKs(g, key, ksReady(""))
	ks := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, key, ks)).To(Succeed())
	patch := client.MergeFrom(ks.DeepCopy())
	ks.Spec.Suspend = true
	g.Expect(env.Client.Patch(ctx, ks, patch)).To(Succeed())

	_, err := repo.Commit("main", map[string]string{
		"deploy/settings.yaml": configMap(ns, "settings", "2"),
		"deploy/new.yaml":      configMap(ns, "new", "1"),
		"deploy/creds.yaml":    secretManifest(ns, "creds", "swordfish"),
	}, "change")
	g.Expect(err).NotTo(HaveOccurred())
	sha, err := repo.Remove("main", []string{"deploy/old.yaml"}, "drop old")
	g.Expect(err).NotTo(HaveOccurred())
	gitRepo := &sourcev1.GitRepository{ObjectMeta: objectMeta(ns, "app")}
	testutil.RequestReconcile(g, env.Client, gitRepo, "next")
	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, key, gitRepo)).To(Succeed())
		g.Expect(gitRepo.Status.Artifact).NotTo(BeNil())
		return gitRepo.Status.Artifact.Revision
	}, timeout, interval).Should(Equal("main@sha1:" + sha))

	// The controller's cache sees the new artifact a moment later.
	g.Eventually(func(g Gomega) string {
		code, page := getPreview(g, ns, "app")
		g.Expect(code).To(Equal(http.StatusOK), page)
		return page
	}, timeout, interval).Should(ContainSubstring("Revision <strong>main@sha1:" + sha + "</strong>: 3 objects built"))
	_, page := getPreview(g, ns, "app")
	g.Expect(page).To(MatchRegexp(`(?s)drifted</span> ConfigMap/` + ns + `/settings</h2>.*<span class="diff-remove">-  value: &#34;1&#34;</span>\s*<span class="diff-add">&#43;  value: &#34;2&#34;</span>`))
	g.Expect(page).To(MatchRegexp(`created</span> ConfigMap/` + ns + `/new</h2>`))
	g.Expect(page).To(MatchRegexp(`deleted</span> ConfigMap/` + ns + `/old</h2>`))
	g.Expect(page).To(MatchRegexp(`(?s)drifted</span> Secret/` + ns + `/creds</h2>.*\*\*\* \(changed\)`))
	for _, secret := range []string{"hunter2", "swordfish", "aHVudGVyMg", "c3dvcmRmaXNo"} {
		g.Expect(page).NotTo(ContainSubstring(secret))
	}
	g.Expect(configMapData(g, ns, "settings")).To(Equal("1"), "the preview wrote nothing")
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "new"}, &corev1.ConfigMap{}))).To(BeTrue())
	g.Expect(configMapData(g, ns, "old")).To(Equal("1"))

	_, err = repo.Commit("main", map[string]string{"deploy/kustomization.yaml": "resources: [missing.yaml]\n"}, "break the build")
	g.Expect(err).NotTo(HaveOccurred())
	testutil.RequestReconcile(g, env.Client, gitRepo, "broken")
	g.Eventually(func() string { _, page := getPreview(g, ns, "app"); return page }, timeout, interval).
		Should(And(ContainSubstring(`id="preview-error"`), ContainSubstring("missing.yaml")))
}

// getPreview returns the status and body of the preview page of the
// Kustomization ns/name.
func getPreview(g Gomega, ns, name string) (int, string) {
	resp, err := http.Get("http://" + uiAddr + "/object/Kustomization/" + ns + "/" + name + "/preview")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

// configMapData returns the value of the ConfigMap ns/name.
func configMapData(g Gomega, ns, name string) string {
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	return cm.Data["value"]
}
