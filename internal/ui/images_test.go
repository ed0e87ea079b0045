package ui

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// scanned is when the test repositories were last scanned.
var scanned = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// imageObjectsForTest are image objects of two namespaces, with
// credentials in a Secret and in specs that the page must not show.
func imageObjectsForTest() []client.Object {
	meta1 := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}
	}
	podinfo := &imagev1.ImageRepository{ObjectMeta: meta1("team-a", "podinfo"), Spec: imagev1.ImageRepositorySpec{
		Image: "bot:hunter2@registry.example/podinfo", SecretRef: &meta.LocalObjectReference{Name: "registry-creds"}}}
	podinfo.Status.CanonicalImageName = "registry.example/podinfo"
	podinfo.Status.LastScanResult = &imagev1.ScanResult{TagCount: 3, ScanTime: metav1.NewTime(scanned)}
	podinfo.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "Succeeded", "successful scan: found 3 tags")}
	broken := &imagev1.ImageRepository{ObjectMeta: meta1("team-a", "broken")}
	broken.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", imagev1.ReasonAuthenticationFailed,
		`registry refused <script>alert("x")</script>`)}
	base := &imagev1.ImageRepository{ObjectMeta: meta1("team-b", "base")}
	base.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "Succeeded", "")}

	semver := &imagev1.ImagePolicy{ObjectMeta: meta1("team-a", "podinfo"), Spec: imagev1.ImagePolicySpec{
		ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo"},
		Policy:             imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "6.x"}}}}
	semver.Labels = map[string]string{"app": "podinfo"}
	semver.Annotations = map[string]string{imagev1.PinAnnotation: "6.1.0"}
	semver.Status.LatestRef = &imagev1.ImageRef{Name: "registry.example/podinfo", Tag: "6.1.0", Digest: "sha256:abc123"}
	semver.Status.ObservedPreviousRef = &imagev1.ImageRef{Name: "registry.example/podinfo", Tag: "6.0.0"}
	semver.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "Succeeded", "latest image tag 6.1.0")}
	nightly := &imagev1.ImagePolicy{ObjectMeta: meta1("team-a", "nightly"), Spec: imagev1.ImagePolicySpec{
		ImageRepositoryRef: meta.NamespacedObjectReference{Name: "podinfo"},
		Policy:             imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{Order: imagev1.OrderDesc}}}}
	elsewhere := &imagev1.ImagePolicy{ObjectMeta: meta1("team-a", "elsewhere"), Spec: imagev1.ImagePolicySpec{
		ImageRepositoryRef: meta.NamespacedObjectReference{Namespace: "team-b", Name: "base"},
		Policy:             imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{}}}}

	pushed, ran := metav1.NewTime(scanned.Add(time.Minute)), metav1.NewTime(scanned.Add(2*time.Minute))
	fleet := &imagev1.ImageUpdateAutomation{ObjectMeta: meta1("team-a", "fleet"), Spec: imagev1.ImageUpdateAutomationSpec{
		SourceRef:      imagev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet"},
		PolicySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "podinfo"}},
		GitSpec: &imagev1.GitSpec{Commit: imagev1.CommitSpec{MessageTemplateValues: map[string]string{"token": "s3cr3t-value"}},
			Push: &imagev1.PushSpec{Branch: "auto-updates", Options: map[string]string{"token": "s3cr3t-option"}}}}}
	fleet.Status.LastPushCommit, fleet.Status.LastPushTime = "0123456789abcdef0123456789abcdef01234567", &pushed
	fleet.Status.LastAutomationRunTime = &ran
	fleet.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", "Succeeded", "repository up-to-date")}
	perPolicy := &imagev1.ImageUpdateAutomation{ObjectMeta: meta1("team-b", "per-policy"), Spec: imagev1.ImageUpdateAutomationSpec{
		SourceRef: imagev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "fleet", Namespace: "team-a"},
		GitSpec:   &imagev1.GitSpec{Push: &imagev1.PushSpec{BranchTemplate: "updates/{{ .Policy }}"}}}}
	perPolicy.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", imagev1.ReasonGitOperationFailed, "push failed")}

	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "registry-creds"},
		Data: map[string][]byte{".dockerconfigjson": []byte("hunter2-from-the-secret")}}
	return []client.Object{podinfo, broken, base, semver, nightly, elsewhere, fleet, perPolicy, creds}
}

// between returns the part of body after from up to the next to.
func between(body, from, to string) string {
	_, rest, found := strings.Cut(body, from)
	if !found {
		return ""
	}
	part, _, _ := strings.Cut(rest, to)
	return part
}

// repositorySection returns the section of the repository ns/name.
func repositorySection(body, ns, name string) string {
	return between(body, ">ImageRepository "+ns+"/"+name+"</a>", "</section>")
}

func TestImagesGroupsPoliciesUnderTheirRepository(t *testing.T) {
	g := NewWithT(t)
	code, body := get(g, testServer(imageObjectsForTest()...), "/images")
	g.Expect(code).To(Equal(http.StatusOK))

	podinfo := repositorySection(body, "team-a", "podinfo")
	g.Expect(podinfo).To(And(ContainSubstring(`<span class="state state-Ready">Ready</span>`),
		ContainSubstring("<code>registry.example/podinfo</code>"), ContainSubstring("3 tags"),
		ContainSubstring(`<time datetime="2026-03-01T10:00:00Z">`)))
	g.Expect(podinfo).NotTo(ContainSubstring("successful scan"), "the message of a Ready repository")
	g.Expect(podinfo).To(MatchRegexp(`href="/object/ImagePolicy/team-a/podinfo"(.|\n)*semver 6.x(.|\n)*` +
		`<span title="registry.example/podinfo:6.1.0@sha256:abc123">6.1.0</span> <span class="muted digest">sha256:abc123</span> <span class="muted pinned">\(pinned to 6.1.0\)</span>` +
		`(.|\n)*<span title="registry.example/podinfo:6.0.0">6.0.0</span>`))
	g.Expect(podinfo).To(MatchRegexp(`href="/object/ImagePolicy/team-a/nightly"(.|\n)*alphabetical desc(.|\n)*none yet`))
	g.Expect(podinfo).NotTo(ContainSubstring("elsewhere"))
	g.Expect(repositorySection(body, "team-b", "base")).To(And(ContainSubstring("team-a/elsewhere"),
		ContainSubstring("numerical asc"), ContainSubstring("not scanned yet")), "a policy that reads another namespace")
	g.Expect(body).To(ContainSubstring(`href="/object/ImageRepository/team-a/podinfo"`))

	broken := repositorySection(body, "team-a", "broken")
	g.Expect(broken).To(And(ContainSubstring("state-Failing"), ContainSubstring(imagev1.ReasonAuthenticationFailed),
		ContainSubstring("registry refused &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"), ContainSubstring("No policy reads")))
	g.Expect(body).NotTo(ContainSubstring("<script>"))
	g.Expect(body).NotTo(Or(ContainSubstring("hunter2"), ContainSubstring("s3cr3t"), ContainSubstring("registry-creds")),
		"no Secret, no credential of a spec")
}

func TestImagesShowsAutomations(t *testing.T) {
	g := NewWithT(t)
	_, body := get(g, testServer(imageObjectsForTest()...), "/images")
	fleet := between(section(body, "automations"), `href="/object/ImageUpdateAutomation/team-a/fleet"`, "</tr>")
	g.Expect(fleet).To(And(ContainSubstring(`<a href="/object/GitRepository/team-a/fleet">GitRepository team-a/fleet</a>`),
		ContainSubstring("<code>auto-updates</code>"),
		ContainSubstring(`<code title="0123456789abcdef0123456789abcdef01234567">0123456789ab</code>`),
		ContainSubstring(`<time datetime="2026-03-01T10:01:00Z">`), ContainSubstring(`<time datetime="2026-03-01T10:02:00Z">`),
		ContainSubstring(`<a href="/object/ImagePolicy/team-a/podinfo">podinfo</a>`)))
	g.Expect(fleet).NotTo(Or(ContainSubstring("nightly"), ContainSubstring("elsewhere")), "outside its selector")
	g.Expect(fleet).NotTo(ContainSubstring("repository up-to-date"), "the message of a Ready automation")

	perPolicy := between(section(body, "automations"), `href="/object/ImageUpdateAutomation/team-b/per-policy"`, "</tr>")
	g.Expect(perPolicy).To(And(ContainSubstring("GitRepository team-a/fleet"),
		ContainSubstring("a branch per update: <code>updates/{{ .Policy }}</code>"), ContainSubstring("none yet"),
		ContainSubstring(imagev1.ReasonGitOperationFailed), ContainSubstring("push failed"), ContainSubstring("<span class=\"muted\">none</span>")))
}

func TestImagesFiltersByNamespace(t *testing.T) {
	g := NewWithT(t)
	h := testServer(imageObjectsForTest()...)
	_, body := get(g, h, "/images?namespace=team-b")
	g.Expect(body).To(And(ContainSubstring("<option selected>team-b</option>"), ContainSubstring("<option>team-a</option>")))
	g.Expect(section(body, "repositories")).To(ContainSubstring("ImageRepository team-b/base"))
	g.Expect(body).To(ContainSubstring("ImageUpdateAutomation team-b/per-policy"))
	g.Expect(body).NotTo(Or(ContainSubstring("ImageRepository team-a/"), ContainSubstring("ImagePolicy team-a/"),
		ContainSubstring("ImageUpdateAutomation team-a/")), "no object of team-a")

	_, body = get(g, h, "/images?namespace=team-a")
	g.Expect(between(body, `id="repositories"`, `id="automations"`)).NotTo(ContainSubstring("team-b/base\">ImageRepository"))
	g.Expect(between(body, `id="unlisted"`, "</table>")).To(And(ContainSubstring("ImagePolicy team-a/elsewhere"),
		ContainSubstring(`href="/object/ImageRepository/team-b/base"`)), "its repository is filtered out")
	g.Expect(section(body, "automations")).NotTo(ContainSubstring("per-policy"))
}

// A UI that does not watch a kind (`windlass ui` for a user who may not
// list it) says so, and does not list it: that would start an informer.
func TestImagesLeavesOutTheKindsItDoesNotWatch(t *testing.T) {
	g := NewWithT(t)
	var listed []string
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(imageObjectsForTest()...).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			gvk, err := c.GroupVersionKindFor(list)
			g.Expect(err).NotTo(HaveOccurred())
			listed = append(listed, gvk.Kind)
			return c.List(ctx, list, opts...)
		}}).Build()
	shown := kinds.Where(func(k kinds.Kind) bool { return k.Kind != imagev1.ImagePolicyKind })
	code, body := get(g, (&Server{Reader: c, Kinds: shown, Log: logr.Discard()}).Handler(), "/images")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(listed).To(ConsistOf("ImageRepositoryList", "ImageUpdateAutomationList"))
	g.Expect(between(body, `id="hidden"`, "</p>")).To(ContainSubstring("ImagePolicy"))
	g.Expect(body).To(ContainSubstring("ImageRepository team-a/podinfo"))
	g.Expect(body).NotTo(ContainSubstring("/object/ImagePolicy/"))
}

func TestObjectPageShowsThePolicysLatestTag(t *testing.T) {
	g := NewWithT(t)
	_, body := get(g, testServer(imageObjectsForTest()...), "/object/ImagePolicy/team-a/podinfo")
	g.Expect(section(body, "revisions")).To(ContainSubstring("<th>Latest image tag</th><td>6.1.0</td>"))
}
