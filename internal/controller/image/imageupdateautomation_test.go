package image

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// Credentials of the tests' git server, which refuses anonymous pushes.
const (
	gitUser = "automation"
	gitPass = "p4ss-for-git"
)

// deployment is a Deployment whose image carries a setter marker of the
// policy ns:app.
func deployment(ns, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app   # the app
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: app
          image: %s # {"$imagepolicy": "%s:app"}
          args: ["--port", "8080"]
`, image, ns)
}

// automationStory is a namespace with a registry, an ImageRepository and
// an ImagePolicy "app" that elects the highest 1.x tag, and a git
// repository whose deploy/app.yaml marks the image with the policy.
type automationStory struct {
	ns      string
	reg     *testRegistry
	git     *gitserver.Server
	repo    *gitserver.Repo
	url     string
	image   string
	initial string
}

// newAutomationStory sets the story up with the tags 1.0.0 and 1.1.0;
// the file names 1.0.0.
func newAutomationStory(t *testing.T) *automationStory {
	g := NewWithT(t)
	s := &automationStory{ns: env.CreateNamespace(t), reg: startRegistry(t, "", ""), git: gitserver.NewForTest(t)}
	s.image = s.reg.host + "/app"
	s.reg.push(t, "app", "1.0.0", "1.1.0")
	s.git.SetBasicAuth(gitUser, gitPass)
	s.repo = s.git.MustInitRepo(t, "fleet.git", "main")
	s.initial = s.repo.MustCommit(t, "main", map[string]string{"deploy/app.yaml": deployment(s.ns, s.image+":1.0.0")}, "init")
	s.url = s.git.MustStartHTTP(t) + "/fleet.git"
	create(g, imageRepository(s.ns, "app", s.image))
	create(g, imagePolicy(s.ns, "app", "app", semverPolicy("^1.0")))
	create(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "git"},
		Data: map[string][]byte{"username": []byte(gitUser), "password": []byte(gitPass)}})
	create(g, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "fleet"},
		Spec: sourcev1.GitRepositorySpec{URL: s.url, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}, SecretRef: &meta.LocalObjectReference{Name: "git"}}})
	return s
}

// automation returns an automation of the story's repository, run every
// second.
func (s *automationStory) automation(name string) *imagev1.ImageUpdateAutomation {
	return &imagev1.ImageUpdateAutomation{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "fleet"},
			Interval:  metav1.Duration{Duration: time.Second},
			GitSpec: &imagev1.GitSpec{Commit: imagev1.CommitSpec{
				Author: imagev1.CommitUser{Name: "Image Bot", Email: "bot@example.com"}}},
			Update: &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "./deploy"},
		},
	}
}

// pushesCounted returns windlass_image_update_pushes_total for result. It
// counts the pushes of the whole process, other tests' too: compare its
// increases only.
func pushesCounted(result string) float64 {
	return promtestutil.ToFloat64(metrics.ImagePushes.WithLabelValues(result))
}

// show returns the output of git in the bare repository.
func (s *automationStory) show(g Gomega, args ...string) string {
	out, err := s.git.GitCommand(s.repo.Path(), args...).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
	return string(out)
}

// TestImageUpdateAutomation_Story: the policy's image is committed to the
// marked field, only there (the rest of the file keeps its bytes), with a
// note that says why, and the push is counted; a new tag pushed to the
// registry leads to a second commit, and a run with nothing new clones
// nothing.
func TestImageUpdateAutomation_Story(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	a := s.automation("app")
	pushes := pushesCounted(metrics.ResultSuccess)
	create(g, a)
	a = testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool { return a.Status.LastPushCommit != "" })
	g.Expect(pushesCounted(metrics.ResultSuccess)).To(BeNumerically(">", pushes))
	head, err := s.repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Status.LastPushCommit).To(Equal(head))
	g.Expect(a.Status.ObservedPolicies).To(HaveKeyWithValue("app", imagev1.ImageRef{Name: s.image, Tag: "1.1.0"}))
	g.Expect(s.show(g, "show", "main:deploy/app.yaml")).To(Equal(deployment(s.ns, s.image+":1.1.0")))
	g.Expect(s.show(g, "log", "-1", "--format=%an <%ae>%n%P")).To(Equal("Image Bot <bot@example.com>\n" + s.initial + "\n"))
	note := s.show(g, "notes", "show", head)
	g.Expect(note).To(HavePrefix(imageupdate.NoteHeader))
	g.Expect(note).To(ContainSubstring("automation: " + s.ns + "/app"))
	g.Expect(note).To(ContainSubstring("oldValue: " + s.image + ":1.0.0"))
	g.Expect(note).To(ContainSubstring("reason: 'latest by policy: semver ^1.0'"))
	g.Expect(testutil.EventMessages(g, env.Client, a, imagev1.ImageUpdateAutomationKind)).To(ContainElement(
		fmt.Sprintf("Pushed: pushed commit '%s' to branch 'main'\n- %s:1.0.0 -> %s:1.1.0", head[:12], s.image, s.image)))

	// Nothing new: the runs that follow list the remote (one request each)
	// and clone nothing, so they write no status (a checkout would record
	// lastAutomationRunTime).
	// Nothing new: the runs that follow list the remote (one request each)
	// and clone nothing (no upload-pack request), so they write nothing.
	// One checkout is allowed: a run may read the status from the cache
	// before the push is in it.
	ready(g, a)
	clones := func() int64 { return s.git.RequestsFor("fleet.git/git-upload-pack") }
	requests, cloned := s.git.RequestsFor("fleet.git"), clones()
	g.Eventually(func() int64 { return s.git.RequestsFor("fleet.git") }, 30*time.Second).Should(BeNumerically(">=", requests+6))
	g.Expect(clones()-cloned).To(BeNumerically("<=", 1), "runs with nothing new clone nothing")
	a = get(g, a)
	requests = s.git.RequestsFor("fleet.git")
	g.Eventually(func() int64 { return s.git.RequestsFor("fleet.git") }, 30*time.Second).Should(BeNumerically(">=", requests+3))
	g.Expect(get(g, a).ResourceVersion).To(Equal(a.ResourceVersion), "a run with nothing new writes nothing")
	g.Expect(s.repo.Head("main")).To(Equal(head), "no commit when nothing changed")

	s.reg.push(t, "app", "1.2.0")
	a = testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool { return a.Status.LastPushCommit != head })
	g.Expect(s.show(g, "show", "main:deploy/app.yaml")).To(Equal(deployment(s.ns, s.image+":1.2.0")))
	g.Expect(s.show(g, "log", "--format=%H", "main")).To(Equal(a.Status.LastPushCommit + "\n" + head + "\n" + s.initial + "\n"))
	g.Expect(s.show(g, "notes", "show", head)).To(Equal(note), "the first note is kept")
}

// TestImageUpdateAutomation_PushRefused: a server that refuses the push
// (branch protection) leaves the repository as it was, the push is
// counted a failure, and the automation says so.
func TestImageUpdateAutomation_PushRefused(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	g.Expect(s.repo.SetHook("pre-receive", "#!/bin/sh\necho 'branch main is protected' >&2\nexit 1\n")).To(Succeed())
	a := s.automation("app")
	failures := pushesCounted(metrics.ResultFailure)
	create(g, a)
	failed := notReady(g, a, imagev1.ReasonPushRejected)
	g.Expect(pushesCounted(metrics.ResultFailure)).To(BeNumerically(">", failures))
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("branch main is protected"))
	g.Expect(s.repo.Head("main")).To(Equal(s.initial))
	g.Expect(s.show(g, "notes", "list")).To(BeEmpty(), "no note without its commit")
}

// TestImageUpdateAutomation_BadInput: a malformed marker, missing
// credentials and a removed template field each leave the repository as
// it was, with a clear condition.
func TestImageUpdateAutomation_BadInput(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	s.repo.MustCommit(t, "main", map[string]string{"deploy/broken.yaml": "image: x # {\"$imagepolicy\": \"" + s.ns + "\"}\n"}, "broken")
	before, _ := s.repo.Head("main")
	a := s.automation("malformed")
	create(g, a)
	failed := notReady(g, a, imagev1.ReasonUpdateFailed)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("deploy/broken.yaml:1"))
	g.Expect(s.repo.Head("main")).To(Equal(before), "nothing pushed half-way")

	removed := s.automation("removed")
	removed.Spec.GitSpec.Commit.MessageTemplate = "{{ range .Updated.Images }}{{ . }}{{ end }}"
	create(g, removed)
	stalled := testutil.WaitFor(g, env.Client, removed, func(a *imagev1.ImageUpdateAutomation) bool {
		return conditions.IsTrue(a, meta.StalledCondition)
	})
	g.Expect(conditions.Reason(stalled, meta.ReadyCondition)).To(Equal(imagev1.ReasonRemovedTemplateField))

	var secret corev1.Secret
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "git"}, &secret)).To(Succeed())
	g.Expect(env.Client.Delete(context.Background(), &secret)).To(Succeed())
	noCreds := s.automation("no-credentials")
	noCreds.Spec.Update.Path = "./elsewhere"
	create(g, noCreds)
	failed = notReady(g, noCreds, sourcev1.AuthenticationFailedReason)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("secret '" + s.ns + "/git' not found"))
	g.Expect(s.repo.Head("main")).To(Equal(before))
}

// TestImageUpdateAutomation_BranchPerPolicy: a branch template that names
// the policy puts each policy's update on a branch of its own, built from
// the branch checked out, which is left alone.
func TestImageUpdateAutomation_BranchPerPolicy(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	s.reg.push(t, "web", "2.0.0")
	create(g, imageRepository(s.ns, "web", s.reg.host+"/web"))
	create(g, imagePolicy(s.ns, "web", "web", semverPolicy("*")))
	s.repo.MustCommit(t, "main", map[string]string{"deploy/web.yaml": "image: " + s.reg.host + "/web:1.0.0 # {\"$imagepolicy\": \"" + s.ns + ":web\"}\n"}, "web")
	base, _ := s.repo.Head("main")

	a := s.automation("branches")
	a.Spec.GitSpec.Push = &imagev1.PushSpec{BranchTemplate: "update-{{ .Policy }}"}
	create(g, a)
	testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool {
		_, errApp := s.repo.Head("update-app")
		_, errWeb := s.repo.Head("update-web")
		return errApp == nil && errWeb == nil && conditions.IsTrue(a, meta.ReadyCondition)
	})
	g.Expect(s.repo.Head("main")).To(Equal(base), "the branch checked out is not pushed to")
	g.Expect(s.show(g, "show", "update-app:deploy/app.yaml")).To(ContainSubstring(s.image + ":1.1.0"))
	g.Expect(s.show(g, "show", "update-app:deploy/web.yaml")).To(ContainSubstring("/web:1.0.0"), "only the app policy on its branch")
	g.Expect(s.show(g, "show", "update-web:deploy/web.yaml")).To(ContainSubstring("/web:2.0.0"))
	g.Expect(s.show(g, "show", "update-web:deploy/app.yaml")).To(ContainSubstring(s.image + ":1.0.0"))
	g.Expect(s.show(g, "rev-parse", "update-app^")).To(Equal(base + "\n"))
}

// TestImageUpdateAutomation_ManyOnOneBranch: automations that push to the
// same branch at once lose races to each other; each applies its update
// again on the new tip, and no update is lost.
func TestImageUpdateAutomation_ManyOnOneBranch(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	const n = 4
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("team%d/app.yaml", i)] = deployment(s.ns, s.image+":1.0.0")
	}
	s.repo.MustCommit(t, "main", files, "teams")
	for i := range n {
		a := s.automation(fmt.Sprintf("team%d", i))
		a.Spec.Update.Path = fmt.Sprintf("team%d", i)
		create(g, a)
	}
	g.Eventually(func() string {
		out, _ := s.git.GitCommand(s.repo.Path(), "grep", "-c", ":1.1.0", "main", "--").CombinedOutput()
		return string(out)
	}, 60*time.Second, 200*time.Millisecond).Should(Equal(func() string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "main:team%d/app.yaml:1\n", i)
		}
		return b.String()
	}()))
	g.Expect(s.show(g, "rev-list", "--count", "main")).To(Equal(fmt.Sprint(2+n)+"\n"), "one commit per automation")
}

// TestImageUpdateAutomation_Gate: a closed gate holds the automation; it
// commits once the gate opens.
func TestImageUpdateAutomation_Gate(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	a := s.automation("gated")
	a.Spec.Gates = []meta.NamespacedObjectReference{{Name: "release"}}
	create(g, a)
	held := testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool {
		return conditions.IsFalse(a, meta.ApprovedCondition)
	})
	g.Expect(conditions.Message(held, meta.ApprovedCondition)).To(ContainSubstring("gate '" + s.ns + "/release' is missing"))
	g.Expect(s.repo.Head("main")).To(Equal(s.initial))

	openGate(g, s.ns, "release")
	testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool { return a.Status.LastPushCommit != "" })
}

// TestImageUpdateAutomation_GitDown: a git host that is down fails the run
// with a reason, and the automation pushes once it is back.
func TestImageUpdateAutomation_GitDown(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	s.git.SetDown(true)
	a := s.automation("down")
	create(g, a)
	failed := notReady(g, a, imagev1.ReasonGitOperationFailed)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).NotTo(ContainSubstring(gitPass))
	s.git.SetDown(false)
	a = testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool { return a.Status.LastPushCommit != "" })
	g.Expect(s.repo.Head("main")).To(Equal(a.Status.LastPushCommit))
}

// security-2 runner-up: an automation in a tenant's namespace naming the
// GitRepository of another namespace does not push with that repository's
// credentials: it is Stalled (AccessDenied), saying how the repository's
// owner lends them, and nothing reaches the server; once the GitRepository
// lends them to the tenant, the automation runs without being touched.
func TestImageUpdateAutomation_CrossNamespaceCredentialsAreLentOnly(t *testing.T) {
	g := NewWithT(t)
	s := newAutomationStory(t)
	tenant := env.CreateNamespace(t)
	a := s.automation("borrower")
	a.Namespace = tenant
	a.Spec.SourceRef.Namespace = s.ns
	create(g, a)

	stalled := testutil.WaitFor(g, env.Client, a, func(a *imagev1.ImageUpdateAutomation) bool {
		return conditions.IsTrue(a, meta.StalledCondition)
	})
	g.Expect(conditions.Reason(stalled, meta.StalledCondition)).To(Equal(meta.AccessDeniedReason))
	g.Expect(conditions.Message(stalled, meta.StalledCondition)).To(ContainSubstring(
		imagev1.PushFromNamespacesAnnotation + "=" + tenant))
	g.Expect(s.git.RequestsFor("fleet.git")).To(BeZero(), "the server saw nothing of the tenant")

	repo := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "fleet"}, repo)).To(Succeed())
	repo.Annotations = map[string]string{imagev1.PushFromNamespacesAnnotation: tenant}
	g.Expect(env.Client.Update(context.Background(), repo)).To(Succeed())
	ready(g, a)
	g.Expect(s.git.RequestsFor("fleet.git")).To(BeNumerically(">", 0))
}
