package image

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// stepAutomation is an automation in namespace "apps" of the
// GitRepository "fleet".
func stepAutomation(mutate func(*imagev1.ImageUpdateAutomation)) *imagev1.ImageUpdateAutomation {
	a := &imagev1.ImageUpdateAutomation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "auto"},
		Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "fleet"},
			Interval:  metav1.Duration{Duration: time.Minute},
			GitSpec:   &imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Email: "bot@example.com"}}},
		},
	}
	if mutate != nil {
		mutate(a)
	}
	return a
}

// stepSource is a GitRepository of url in namespace ns.
func stepSource(ns, url string, ref *sourcev1.GitRepositoryRef) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Minute}, Reference: ref}}
}

// lentSource is the GitRepository infra/fleet, lending its credentials to
// the pushes of namespaces.
func lentSource(namespaces string) *sourcev1.GitRepository {
	s := stepSource("infra", "https://git.example.com/fleet", nil)
	s.Annotations = map[string]string{imagev1.PushFromNamespacesAnnotation: namespaces}
	return s
}

// describeErr describes a step's error: "" for none, else "stall:<reason>"
// or "fail:<reason>".
func describeErr(err error) string {
	if err == nil {
		return ""
	}
	var stall *outcome.Stalling
	if errors.As(err, &stall) {
		return "stall:" + stall.Reason
	}
	return "fail:" + outcome.ReasonOf(err, "")
}

func TestCheckSpecStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*imagev1.ImageUpdateAutomation)
		want   string
	}{
		{"valid", nil, ""},
		{"strategy", func(a *imagev1.ImageUpdateAutomation) { a.Spec.Update = &imagev1.UpdateStrategy{Strategy: "Kustomize"} },
			"stall:" + imagev1.ReasonInvalidUpdateStrategy},
		{"selector", func(a *imagev1.ImageUpdateAutomation) {
			a.Spec.PolicySelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Nope"}}}
		}, "stall:" + imagev1.ReasonInvalidPolicySelector},
		{"removed field", func(a *imagev1.ImageUpdateAutomation) { a.Spec.GitSpec.Commit.MessageTemplate = "{{ .Updated }}" },
			"stall:" + imagev1.ReasonRemovedTemplateField},
		{"bad message template", func(a *imagev1.ImageUpdateAutomation) { a.Spec.GitSpec.Commit.MessageTemplate = "{{ .Changed" },
			"stall:" + imagev1.ReasonInvalidTemplate},
		{"bad branch template", func(a *imagev1.ImageUpdateAutomation) {
			a.Spec.GitSpec.Push = &imagev1.PushSpec{BranchTemplate: "update-{{ .Policy"}
		}, "stall:" + imagev1.ReasonInvalidTemplate},
		{"no git", func(a *imagev1.ImageUpdateAutomation) { a.Spec.GitSpec = nil }, "stall:" + imagev1.ReasonInvalidSourceConfiguration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &ImageUpdateAutomationReconciler{}
			_, err := r.checkSpec(context.Background(), stepAutomation(tc.mutate), &automationScope{})
			NewWithT(t).Expect(describeErr(err)).To(Equal(tc.want))
		})
	}
}

func TestGetSourceStep(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mutate    func(*imagev1.ImageUpdateAutomation)
		objects   []client.Object
		lockdown  bool
		allowHTTP bool
		maxClone  int64
		want      string
		push      string
	}{
		{name: "clone size bounded as a GitRepository's", objects: []client.Object{stepSource("apps", "https://git.example.com/fleet", nil)},
			maxClone: 4096, push: "master"},
		{name: "branch of the source", objects: []client.Object{stepSource("apps", "https://git.example.com/fleet", &sourcev1.GitRepositoryRef{Branch: "dev"})},
			push: "dev"},
		{name: "default branch", objects: []client.Object{stepSource("apps", "https://git.example.com/fleet", nil)}, push: "master"},
		{name: "checkout overrides", objects: []client.Object{stepSource("apps", "https://git.example.com/fleet", nil)},
			mutate: func(a *imagev1.ImageUpdateAutomation) {
				a.Spec.GitSpec.Checkout = &imagev1.GitCheckoutSpec{Reference: sourcev1.GitRepositoryRef{Branch: "release"}}
			}, push: "release"},
		{name: "tag without push branch", objects: []client.Object{stepSource("apps", "https://git.example.com/fleet", &sourcev1.GitRepositoryRef{Tag: "v1"})},
			want: "stall:" + imagev1.ReasonInvalidSourceConfiguration},
		{name: "tag with push branch", objects: []client.Object{stepSource("apps", "https://git.example.com/fleet", &sourcev1.GitRepositoryRef{Tag: "v1"})},
			mutate: func(a *imagev1.ImageUpdateAutomation) { a.Spec.GitSpec.Push = &imagev1.PushSpec{Branch: "auto"} }, push: "auto"},
		{name: "missing", want: "fail:" + imagev1.ReasonInvalidSourceConfiguration},
		{name: "cross-namespace under lockdown", lockdown: true,
			objects: []client.Object{stepSource("infra", "https://git.example.com/fleet", nil)},
			mutate:  func(a *imagev1.ImageUpdateAutomation) { a.Spec.SourceRef.Namespace = "infra" }, want: "stall:" + meta.AccessDeniedReason},
		{name: "cross-namespace, not lent", objects: []client.Object{stepSource("infra", "https://git.example.com/fleet", nil)},
			mutate: func(a *imagev1.ImageUpdateAutomation) { a.Spec.SourceRef.Namespace = "infra" }, want: "stall:" + meta.AccessDeniedReason},
		{name: "cross-namespace, lent to others", objects: []client.Object{lentSource("team-b, team-c")},
			mutate: func(a *imagev1.ImageUpdateAutomation) { a.Spec.SourceRef.Namespace = "infra" }, want: "stall:" + meta.AccessDeniedReason},
		{name: "cross-namespace, lent", objects: []client.Object{lentSource("team-b, apps")},
			mutate: func(a *imagev1.ImageUpdateAutomation) { a.Spec.SourceRef.Namespace = "infra" }, push: "master"},
		{name: "cross-namespace, lent to all", objects: []client.Object{lentSource("*")},
			mutate: func(a *imagev1.ImageUpdateAutomation) { a.Spec.SourceRef.Namespace = "infra" }, push: "master"},
		{name: "plain http refused", objects: []client.Object{stepSource("apps", "http://git.example.com/fleet", nil)},
			want: "stall:" + meta.InsecureConnectionsDisallowedReason},
		{name: "plain http allowed", allowHTTP: true, objects: []client.Object{stepSource("apps", "http://git.example.com/fleet", nil)}, push: "master"},
		{name: "missing secret", objects: []client.Object{func() client.Object {
			s := stepSource("apps", "https://git.example.com/fleet", nil)
			s.Spec.SecretRef = &meta.LocalObjectReference{Name: "creds"}
			return s
		}()}, want: "fail:" + sourcev1.AuthenticationFailedReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &ImageUpdateAutomationReconciler{NoCrossNamespaceRefs: tc.lockdown, AllowInsecureHTTP: tc.allowHTTP, MaxCloneSize: tc.maxClone,
				Client: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.objects...).Build()}
			obj := stepAutomation(tc.mutate)
			scope := &automationScope{}
			_, err := r.getSource(context.Background(), obj, scope)
			g.Expect(describeErr(err)).To(Equal(tc.want))
			if tc.want == "" {
				g.Expect(pushBranch(obj, scope)).To(Equal(tc.push))
				c := scope.checkout
				g.Expect([]int64{c.MaxTransferBytes, c.MaxObjectBytes, c.MaxCheckoutBytes}).To(HaveEach(tc.maxClone))
			}
		})
	}
}

func TestPushGroups(t *testing.T) {
	refs := map[imageupdate.PolicyKey]imageupdate.ImageRef{
		{Namespace: "apps", Name: "web"}: {Name: "r/web", Tag: "1.0.0"},
		{Namespace: "apps", Name: "api"}: {Name: "r/api", Tag: "2.0.0"},
	}
	for _, tc := range []struct {
		name, template string
		want           []string
		err            string
	}{
		{name: "no template", want: []string{"main"}},
		{name: "per policy", template: "update-{{ .Policy }}", want: []string{"update-api", "update-web"}},
		{name: "per policy and tag", template: "{{ .Policy }}/{{ .Tag }}", want: []string{"api/2.0.0", "web/1.0.0"}},
		{name: "one branch", template: "auto/{{ .AutomationObject.Name }}", want: []string{"auto/auto"}},
		{name: "invalid name", template: "bad..{{ .Policy }}", err: "not a valid branch name"},
		{name: "unknown field", template: "{{ .Nope }}", err: "branchTemplate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := stepAutomation(func(a *imagev1.ImageUpdateAutomation) {
				if tc.template != "" {
					a.Spec.GitSpec.Push = &imagev1.PushSpec{BranchTemplate: tc.template}
				}
			})
			scope := &automationScope{refs: refs, checkout: git.CheckoutOptions{Branch: "main"}}
			groups, err := pushGroups(obj, scope)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(describeErr(err)).To(Equal("stall:" + imagev1.ReasonInvalidTemplate))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var branches []string
			total := 0
			for _, grp := range groups {
				branches = append(branches, grp.branch)
				total += len(grp.refs)
			}
			g.Expect(branches).To(Equal(tc.want))
			g.Expect(total).To(Equal(len(refs)), "every policy is in one group")
		})
	}
}

func TestValidBranchName(t *testing.T) {
	g := NewWithT(t)
	for _, ok := range []string{"main", "update/web-1.2.3", "feature_x", "a.b"} {
		g.Expect(validBranchName(ok)).To(BeTrue(), ok)
	}
	for _, bad := range []string{"", "-x", "a..b", "a b", "a~1", "x.lock", "a/", "/a", "a//b", "a@{1}", "@", "a:b", "a\x01"} {
		g.Expect(validBranchName(bad)).To(BeFalse(), bad)
	}
}

// TestPolicyRepositoryLockdown: under --no-cross-namespace-refs a policy
// that names a repository in another namespace stalls.
func TestPolicyRepositoryLockdown(t *testing.T) {
	g := NewWithT(t)
	r := &ImagePolicyReconciler{NoCrossNamespaceRefs: true, Client: fake.NewClientBuilder().WithScheme(scheme.New()).Build()}
	p := imagePolicy("apps", "web", "web", semverPolicy("*"))
	p.Spec.ImageRepositoryRef.Namespace = "images"
	_, err := r.getRepository(context.Background(), p, &policyScope{})
	g.Expect(describeErr(err)).To(Equal("stall:" + imagev1.ReasonAccessDenied))
}
