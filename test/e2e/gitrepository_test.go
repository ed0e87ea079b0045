package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// A user applies a v1 GitRepository that points at a Git server; it becomes
// Ready, and its artifact can be downloaded, matches the status, and holds
// the committed files. Deleting the object deletes its artifact.
func TestGitRepository_ArtifactServed(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	url, sha := servedRepo(t, "podinfo.git", map[string]string{
		"kustomization.yaml":  "resources:\n- deploy/app.yaml\n",
		"deploy/app.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		".github/ci.yaml":     "on: push\n",
		"docs/README.md":      "# podinfo\n",
		"deploy/.hidden.yaml": "x: 1\n",
	})

	obj := applyGitRepository(g, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: podinfo
  namespace: %s
spec:
  interval: 1m
  url: %s
  ref:
    branch: main
`, ns, url))

	got := waitReady(g, client.ObjectKeyFromObject(obj), "main@sha1:"+sha)
	a := got.Status.Artifact
	g.Expect(a.URL).To(HavePrefix("http://"+ctrlProc.StorageAddr+"/"), "the URL advertises --storage-addr")
	g.Expect(a.Digest).To(HavePrefix("sha256:"))

	dir := testutil.Extract(t, g, testutil.Download(g, httpClient, a))
	g.Expect(os.ReadFile(filepath.Join(dir, "kustomization.yaml"))).To(Equal([]byte("resources:\n- deploy/app.yaml\n")))
	g.Expect(os.ReadFile(filepath.Join(dir, "deploy", "app.yaml"))).To(Equal([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n")))
	g.Expect(os.ReadFile(filepath.Join(dir, "docs", "README.md"))).To(Equal([]byte("# podinfo\n")))
	g.Expect(os.ReadFile(filepath.Join(dir, "deploy", ".hidden.yaml"))).To(Equal([]byte("x: 1\n")))
	g.Expect(filepath.Join(dir, ".github")).NotTo(BeAnExistingFile(), "CI folders are excluded by default")
	g.Expect(filepath.Join(dir, ".git")).NotTo(BeAnExistingFile())

	// Deleting the object runs the finalizer, which garbage-collects the
	// artifact.
	g.Expect(env.Client.Delete(context.Background(), got)).To(Succeed())
	g.Eventually(func() bool {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), &sourcev1.GitRepository{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the finalizer is removed")
	g.Eventually(func(g Gomega) int {
		resp, err := httpClient.Get(a.URL)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}, timeout, interval).Should(Equal(http.StatusNotFound), "the artifact is deleted with its object")
}

// The seed manifests of existing users are v1beta1 GitRepositories, with
// fields that v1 dropped: the API server accepts them, warns that the
// version is deprecated, and serves them as v1, which the controller
// reconciles.
func TestGitRepository_V1beta1SeedManifest(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	url, sha := servedRepo(t, "seed.git", map[string]string{
		"clusters/prod/kustomization.yaml": "resources: []\n",
	})
	manifest := fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1beta1
kind: GitRepository
metadata:
  name: flux-system
  namespace: %s
spec:
  interval: 1m
  url: %s
  ref:
    branch: main
  gitImplementation: go-git
`, ns, url)

	u := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
	c, warnings := clientWithWarnings(g)
	g.Expect(c.Create(context.Background(), u)).To(Succeed())
	g.Expect(warnings.Warnings()).To(ContainElement(ContainSubstring("v1beta1 GitRepository is deprecated")))

	got := waitReady(g, client.ObjectKey{Namespace: ns, Name: "flux-system"}, "main@sha1:"+sha)
	g.Expect(got.Spec.URL).To(Equal(url))
	g.Expect(got.Spec.Interval.Duration.String()).To(Equal("1m0s"))
	g.Expect(got.Spec.Reference).To(Equal(&sourcev1.GitRepositoryRef{Branch: "main"}))
	dir := testutil.Extract(t, g, testutil.Download(g, httpClient, got.Status.Artifact))
	g.Expect(filepath.Join(dir, "clusters", "prod", "kustomization.yaml")).To(BeARegularFile())

	// Read as v1, as an unstructured object, the dropped field is gone.
	asV1 := &unstructured.Unstructured{}
	asV1.SetAPIVersion(sourcev1.GroupVersion.String())
	asV1.SetKind(sourcev1.GitRepositoryKind)
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(got), asV1)).To(Succeed())
	g.Expect(asV1.Object["spec"]).NotTo(HaveKey("gitImplementation"))

	// The object still reads back in the version it was applied in.
	back := &unstructured.Unstructured{}
	back.SetAPIVersion("source.toolkit.fluxcd.io/v1beta1")
	back.SetKind("GitRepository")
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(got), back)).To(Succeed())
	g.Expect(nestedString(back, "spec", "url")).To(Equal(url))
	g.Expect(nestedString(back, "status", "artifact", "revision")).To(Equal("main@sha1:" + sha))
}

// The metrics endpoint reports reconciliation durations under the GitOps
// Toolkit's name and labels, so that existing dashboards keep working.
func TestMetrics_ReconcileDuration(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	url, sha := servedRepo(t, "metrics.git", map[string]string{"a.yaml": "a: 1\n"})
	obj := applyGitRepository(g, fmt.Sprintf(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: measured
  namespace: %s
spec:
  interval: 1m
  url: %s
  ref:
    branch: main
`, ns, url))
	waitReady(g, client.ObjectKeyFromObject(obj), "main@sha1:"+sha)

	metricsURL := "http://" + ctrlProc.MetricsAddr + "/metrics"
	g.Eventually(func(g Gomega) []string {
		return metricLines(scrape(g, metricsURL), "gotk_reconcile_duration_seconds_count")
	}, timeout, interval).Should(ContainElement(SatisfyAll(
		ContainSubstring(`kind="GitRepository"`),
		ContainSubstring(`name="measured"`),
		ContainSubstring(`namespace="`+ns+`"`),
	)))
	text := scrape(g, metricsURL)
	g.Expect(text).To(ContainSubstring("# TYPE gotk_reconcile_duration_seconds histogram"))
}
