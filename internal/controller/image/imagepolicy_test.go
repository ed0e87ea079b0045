package image

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestImagePolicy_Elects: each rule elects its tag from the same
// repository; a new tag moves the semver policy, which keeps the one it
// replaced.
func TestImagePolicy_Elects(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0", "1.2.0", "2.0.0-rc.1", "v1.10.1", "main-abc-100", "main-def-20", "latest")
	create(g, imageRepository(ns, "app", reg.host+"/app"))
	image := reg.host + "/app"

	for _, tc := range []struct {
		name   string
		choice imagev1.ImagePolicyChoice
		filter *imagev1.TagFilter
		want   string
	}{
		{"semver", semverPolicy("^1.0"), nil, "v1.10.1"},
		{"semver-pre", semverPolicy(">=2.0.0-0"), nil, "2.0.0-rc.1"},
		{"numerical", imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{Order: "asc"}},
			&imagev1.TagFilter{Pattern: `^main-[a-f0-9]+-(?P<ts>[0-9]+)$`, Extract: "$ts"}, "main-abc-100"},
		{"alphabetical-desc", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{Order: "desc"}},
			&imagev1.TagFilter{Pattern: `^main-`}, "main-abc-100"},
	} {
		p := imagePolicy(ns, tc.name, "app", tc.choice)
		p.Spec.FilterTags = tc.filter
		create(g, p)
		p = ready(g, p)
		g.Expect(p.Status.LatestRef).To(Equal(&imagev1.ImageRef{Name: image, Tag: tc.want}), tc.name)
		g.Expect(conditions.Message(p, meta.ReadyCondition)).To(Equal("Latest image tag for " + image + " resolved to " + tc.want))
	}

	reg.push(t, "app", "1.11.0")
	p := testutil.WaitFor(g, env.Client, imagePolicy(ns, "semver", "app", imagev1.ImagePolicyChoice{}), func(p *imagev1.ImagePolicy) bool {
		return p.Status.LatestRef != nil && p.Status.LatestRef.Tag == "1.11.0"
	})
	g.Expect(p.Status.ObservedPreviousRef).To(Equal(&imagev1.ImageRef{Name: image, Tag: "v1.10.1"}))
	g.Expect(testutil.EventMessages(g, env.Client, p, imagev1.ImagePolicyKind)).
		To(ContainElement("Succeeded: Latest image tag for " + image + " updated from v1.10.1 to 1.11.0"))

	// Ordered by the policy over HTTP, best first.
	code, body := getTags(g, "/images/"+ns+"/app/tags?policy=semver&limit=3")
	g.Expect(code).To(Equal(200))
	g.Expect(body.Tags).To(Equal([]string{"1.11.0", "v1.10.1", "1.2.0"}))
	code, body = getTags(g, "/images/"+ns+"/app/tags?policy=nope")
	g.Expect(code).To(Equal(404))
	g.Expect(body.Error).To(ContainSubstring("ImagePolicy '" + ns + "/nope' not found"))
}

// TestImagePolicy_BadInput: an invalid range or pattern stalls; a rule
// that matches no tag says so and keeps waiting for one; a missing
// repository is reported.
func TestImagePolicy_BadInput(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0", "1.1.0")
	create(g, imageRepository(ns, "app", reg.host+"/app"))

	badRange := imagePolicy(ns, "bad-range", "app", semverPolicy(">=1.0.0 <<2"))
	badPattern := imagePolicy(ns, "bad-pattern", "app", semverPolicy("*"))
	badPattern.Spec.FilterTags = &imagev1.TagFilter{Pattern: "(unclosed"}
	for _, p := range []*imagev1.ImagePolicy{badRange, badPattern} {
		create(g, p)
		stalled := testutil.WaitFor(g, env.Client, p, func(p *imagev1.ImagePolicy) bool {
			return conditions.IsTrue(p, meta.StalledCondition)
		})
		g.Expect(conditions.Reason(stalled, meta.ReadyCondition)).To(Equal(imagev1.ReasonInvalidPolicy))
	}
	g.Expect(conditions.Message(get(g, badRange), meta.ReadyCondition)).To(ContainSubstring("policy.semver.range"))

	none := imagePolicy(ns, "none", "app", semverPolicy(">=9.0.0"))
	create(g, none)
	failed := notReady(g, none, imagev1.ReasonNoMatchingTag)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("no tag of 2 matches"))
	reg.push(t, "app", "9.0.1")
	none = ready(g, none)
	g.Expect(none.Status.LatestRef.Tag).To(Equal("9.0.1"))

	missing := imagePolicy(ns, "missing", "nope", semverPolicy("*"))
	create(g, missing)
	failed = notReady(g, missing, imagev1.ReasonDependencyNotReady)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("ImageRepository '" + ns + "/nope' not found"))
}

// TestImagePolicy_Pin: the pin annotation elects its tag while it is set,
// a pin to a tag that does not exist is reported, and removing it gives
// the rule back.
func TestImagePolicy_Pin(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0", "1.1.0")
	create(g, imageRepository(ns, "app", reg.host+"/app"))
	p := imagePolicy(ns, "app", "app", semverPolicy("*"))
	create(g, p)
	ready(g, p)

	pin(g, p, "1.0.0")
	p = testutil.WaitFor(g, env.Client, p, func(p *imagev1.ImagePolicy) bool { return p.Status.LatestRef.Tag == "1.0.0" })
	g.Expect(conditions.Message(p, meta.ReadyCondition)).To(HaveSuffix("(pinned by the windlass.dev/pinned-tag annotation)"))

	pin(g, p, "0.9.0")
	failed := notReady(g, p, imagev1.ReasonNoMatchingTag)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("pinned tag '0.9.0'"))
	g.Expect(failed.Status.LatestRef.Tag).To(Equal("1.0.0"), "a failed run keeps the last elected image")

	pin(g, p, "")
	testutil.WaitFor(g, env.Client, p, func(p *imagev1.ImagePolicy) bool {
		return p.Status.LatestRef.Tag == "1.1.0" && conditions.IsTrue(p, meta.ReadyCondition)
	})
}

// pin sets the pin annotation of p to tag, or removes it when tag is "".
func pin(g Gomega, p *imagev1.ImagePolicy, tag string) {
	value := `"` + tag + `"`
	if tag == "" {
		value = "null"
	}
	patch := []byte(`{"metadata":{"annotations":{"` + imagev1.PinAnnotation + `":` + value + `}}}`)
	g.Expect(env.Client.Patch(context.Background(), p, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}

// TestImagePolicy_Digest: digest reflection writes the digest of the
// elected tag, as the registry serves it.
func TestImagePolicy_Digest(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0")
	create(g, imageRepository(ns, "app", reg.host+"/app"))
	p := imagePolicy(ns, "app", "app", semverPolicy("*"))
	p.Spec.DigestReflectionPolicy = imagev1.ReflectIfNotPresent
	create(g, p)
	p = ready(g, p)

	ref, err := name.NewTag(reg.host+"/app:1.0.0", name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Head(ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Status.LatestRef.Digest).To(Equal(desc.Digest.String()))
}

// TestImagePolicy_CrossNamespace: a policy in another namespace may use a
// repository only when the repository's accessFrom selects its
// namespace.
func TestImagePolicy_CrossNamespace(t *testing.T) {
	g := NewWithT(t)
	images, apps := env.CreateNamespace(t), env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "app", "1.0.0")
	repo := imageRepository(images, "app", reg.host+"/app")
	create(g, repo)
	ready(g, repo)

	p := imagePolicy(apps, "app", "app", semverPolicy("*"))
	p.Spec.ImageRepositoryRef.Namespace = images
	create(g, p)
	failed := notReady(g, p, imagev1.ReasonAccessDenied)
	g.Expect(conditions.Message(failed, meta.ReadyCondition)).To(ContainSubstring("does not give access to namespace '" + apps + "'"))

	var ns corev1.Namespace
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: apps}, &ns)).To(Succeed())
	ns.Labels = map[string]string{"team": "apps"}
	g.Expect(env.Client.Update(context.Background(), &ns)).To(Succeed())
	repo = get(g, repo)
	repo.Spec.AccessFrom = &sourcev1.AccessFrom{NamespaceSelectors: []sourcev1.NamespaceSelector{{MatchLabels: map[string]string{"team": "apps"}}}}
	g.Expect(env.Client.Update(context.Background(), repo)).To(Succeed())
	p = ready(g, p)
	g.Expect(p.Status.LatestRef.Tag).To(Equal("1.0.0"))
}
