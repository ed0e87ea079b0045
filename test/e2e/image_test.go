package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// The loop of seed 004, with no person in it: a new tag pushed to the
// registry is scanned, elected by the policy, committed to the marked
// field of the Deployment in Git, fetched by the GitRepository and
// applied by the Kustomization.
func TestImageAutomation_NewTagReachesTheCluster(t *testing.T) {
	logControllerOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	registry := testutil.StartRegistry(t, "", "")
	image := registry + "/podinfo"
	testutil.PushImage(t, image, []string{"6.0.0"})

	srv := gitserver.NewForTest(t)
	srv.SetBasicAuth("bot", "git-p4ss")
	repo := srv.MustInitRepo(t, "fleet.git", "main")
	repo.MustCommit(t, "main", imageFiles(image, ns), "podinfo")
	url := srv.MustStartHTTP(t) + "/fleet.git"

	applyManifests(g, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: fleet-auth, namespace: %[1]s}
stringData: {username: bot, password: git-p4ss}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: %[1]s}
spec:
  interval: 2s
  url: %[2]s
  ref: {branch: main}
  secretRef: {name: fleet-auth}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: %[1]s}
spec:
  interval: 1h
  path: ./apps
  prune: true
  targetNamespace: %[1]s
  sourceRef: {kind: GitRepository, name: fleet}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: podinfo, namespace: %[1]s}
spec:
  image: %[3]s
  interval: 1s
  insecure: true
---
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImagePolicy
metadata: {name: podinfo, namespace: %[1]s}
spec:
  imageRepositoryRef: {name: podinfo}
  policy:
    semver: {range: 6.x}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: fleet, namespace: %[1]s}
spec:
  interval: 1m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    checkout: {ref: {branch: main}}
    commit:
      author: {name: windlass, email: bot@example.com}
      messageTemplate: 'Update images: {{ range .Changed.Changes }}{{ .OldValue }} -> {{ .NewValue }} {{ end }}'
    push: {branch: main}
  update: {strategy: Setters, path: ./apps}
`, ns, url, image))

	deployedImage := func() string {
		var d appsv1.Deployment
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, &d); err != nil {
			return ""
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	g.Eventually(deployedImage, timeout, interval).Should(Equal(image + ":6.0.0"))

	testutil.PushImage(t, image, []string{"6.1.0", "7.0.0"})
	g.Eventually(deployedImage, timeout, interval).Should(Equal(image+":6.1.0"), "the new tag is applied, by way of Git")
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	out, err := srv.GitCommand(repo.Path(), "log", "-1", "--format=%an%n%s", head).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(Equal(fmt.Sprintf("windlass\nUpdate images: %s:6.0.0 -> %s:6.1.0\n", image, image)))
	note, err := srv.GitCommand(repo.Path(), "notes", "show", head).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(note))
	g.Expect(string(note)).To(ContainSubstring("name: " + ns + "/podinfo"))

	var iua imagev1.ImageUpdateAutomation
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet"}, &iua)).To(Succeed())
	g.Expect(iua.Status.LastPushCommit).To(Equal(head))

	// The scanned tags are served, ordered by the policy, to those who may
	// get the repository and the policy: not to a caller without a token.
	tagsURL := "http://" + ctrlProc.TagsAddr + "/images/" + ns + "/podinfo/tags?policy=podinfo"
	resp, err := http.Get(tagsURL)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	token := testutil.ServiceAccountToken(g, env.Config, ns, "tags-reader")
	testutil.GrantRole(g, env.Client, ns, "tags-reader", ns, "tags-reader", rbacv1.PolicyRule{Verbs: []string{"get"},
		APIGroups: []string{imagev1.GroupVersion.Group}, Resources: []string{"imagerepositories", "imagepolicies"}})
	req, err := http.NewRequest(http.MethodGet, tagsURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var tags struct {
		Tags []string `json:"tags"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&tags)).To(Succeed())
	g.Expect(tags.Tags).To(Equal([]string{"6.1.0", "6.0.0"}))
}

// applyManifests creates the objects of a multi-document YAML stream.
func applyManifests(g *WithT, manifests string) {
	for _, doc := range strings.Split(manifests, "\n---\n") {
		obj := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed(), doc)
	}
}

// imageFiles are the files of the repository that image automation
// updates: a Deployment whose image is marked for the policy ns/podinfo.
func imageFiles(image, ns string) map[string]string {
	return map[string]string{"apps/podinfo.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
      - name: podinfo
        image: %s:6.0.0 # {"$imagepolicy": "%s:podinfo"}
`, image, ns)}
}
