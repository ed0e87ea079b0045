package image

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestTagsServedOnlyToThoseWhoMayGetTheRepository is the review's attack
// (security-2, runner-up): the tags server on :9095 listed the tags of
// every namespace's private images to any caller. Now a caller without a
// token, or with one the API server does not know, is refused 401; a
// tenant's service account of another namespace is refused 403, by name
// and by policy; one its namespace lets get the ImageRepository reads its
// tags, and, to order them by an ImagePolicy, it must be let get that too.
func TestTagsServedOnlyToThoseWhoMayGetTheRepository(t *testing.T) {
	g := NewWithT(t)
	ns, tenant := env.CreateNamespace(t), env.CreateNamespace(t)
	reg := startRegistry(t, "", "")
	reg.push(t, "private", "1.0.0", "1.1.0")
	repo := imageRepository(ns, "private", reg.host+"/private")
	create(g, repo)
	ready(g, repo)
	create(g, imagePolicy(ns, "newest", "private", semverPolicy(">=1.0.0")))
	path := "/images/" + ns + "/private/tags"

	code, body := getTagsAs(g, "", path)
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	g.Expect(body.Error).To(ContainSubstring("send a bearer token"))
	g.Expect(body.Tags).To(BeEmpty())
	code, _ = getTagsAs(g, "eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl", path)
	g.Expect(code).To(Equal(http.StatusUnauthorized), "a token the API server does not know")

	intruder := testutil.ServiceAccountToken(g, env.Config, tenant, "intruder")
	code, body = getTagsAs(g, intruder, path)
	g.Expect(code).To(Equal(http.StatusForbidden))
	g.Expect(body.Error).To(Equal("system:serviceaccount:" + tenant + ":intruder may not get imagerepositories in the namespace \"" + ns + "\""))
	g.Expect(body.Tags).To(BeEmpty())
	code, _ = getTagsAs(g, intruder, path+"?policy="+ns+"/newest")
	g.Expect(code).To(Equal(http.StatusForbidden))

	reader := testutil.ServiceAccountToken(g, env.Config, ns, "reader")
	testutil.GrantRole(g, env.Client, ns, "read-repositories", ns, "reader", rbacv1.PolicyRule{Verbs: []string{"get"},
		APIGroups: []string{imagev1.GroupVersion.Group}, Resources: []string{"imagerepositories"}})
	code, body = getTagsAs(g, reader, path)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body.Tags).To(Equal([]string{"1.0.0", "1.1.0"}))
	code, body = getTagsAs(g, reader, path+"?policy=newest")
	g.Expect(code).To(Equal(http.StatusForbidden), "ordering by a policy needs to get it: %s", body.Error)
	g.Expect(body.Error).To(ContainSubstring("may not get imagepolicies"))

	code, body = getTagsAs(g, tagsReader(), path+"?policy=newest")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body.Tags).To(Equal([]string{"1.1.0", "1.0.0"}))
}

// TestTagsAccess: what each request of the tags server needs its caller
// to be allowed.
func TestTagsAccess(t *testing.T) {
	repo := func(ns, name string) authzv1.ResourceAttributes {
		return authzv1.ResourceAttributes{Verb: "get", Group: imagev1.GroupVersion.Group, Resource: "imagerepositories", Namespace: ns, Name: name}
	}
	policy := func(ns, name string) authzv1.ResourceAttributes {
		return authzv1.ResourceAttributes{Verb: "get", Group: imagev1.GroupVersion.Group, Resource: "imagepolicies", Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		target string
		want   []authzv1.ResourceAttributes
	}{
		{"/images/apps/app/tags", []authzv1.ResourceAttributes{repo("apps", "app")}},
		{"/images/apps/app/tags?limit=3", []authzv1.ResourceAttributes{repo("apps", "app")}},
		{"/images/apps/app/tags?policy=newest", []authzv1.ResourceAttributes{repo("apps", "app"), policy("apps", "newest")}},
		{"/images/apps/app/tags?policy=team/shared", []authzv1.ResourceAttributes{repo("apps", "app"), policy("team", "shared")}},
		{"/images/apps/app", nil},
		{"/metrics", nil},
	} {
		t.Run(tc.target, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(TagsAccess(httptest.NewRequest(http.MethodGet, tc.target, nil))).To(Equal(tc.want))
		})
	}
}
