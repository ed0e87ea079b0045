package image

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/conditions/check"
	"github.com/windlass-dev/windlass/internal/registry"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	// env is the test control plane, with the image and gating controllers
	// of the real manager running against it (main_test.go).
	env *testenv.Environment
	// tagsURL is the base URL of the tests' tags server (TagsHandler).
	tagsURL string
	// store reads the tag store of the tests' controllers.
	store *registry.Store
	// logs holds what the controllers log.
	logs *testutil.Logs
)

// testRegistry is a loopback OCI registry whose tag list requests are
// counted and which can be taken down.
type testRegistry struct {
	host  string
	lists atomic.Int64
	down  atomic.Bool
}

// startRegistry starts a registry, with basic auth when user is set.
func startRegistry(t *testing.T, user, pass string) *testRegistry {
	r := &testRegistry{}
	h := testutil.NewRegistryHandler()
	if user != "" {
		h = testutil.RequireBasicAuth(h, user, pass)
	}
	r.host = testutil.ServeRegistry(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			http.Error(w, "registry is down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if req.Method == http.MethodGet && len(req.URL.Path) > 10 && req.URL.Path[len(req.URL.Path)-10:] == "/tags/list" {
			r.lists.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	return r
}

// push pushes one random image to repo under every tag of tags.
func (r *testRegistry) push(t *testing.T, repo string, tags ...string) {
	testutil.PushImage(t, r.host+"/"+repo, tags)
}

// pushAuth pushes like push, with basic auth.
func (r *testRegistry) pushAuth(t *testing.T, repo, user, pass string, tags ...string) {
	testutil.PushImage(t, r.host+"/"+repo, tags, remote.WithAuth(&authn.Basic{Username: user, Password: pass}))
}

// imageRepository returns an ImageRepository of image, scanned every
// second.
func imageRepository(ns, name, image string) *imagev1.ImageRepository {
	return &imagev1.ImageRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImageRepositorySpec{Image: image, Insecure: true,
			Interval: metav1.Duration{Duration: time.Second}},
	}
}

// imagePolicy returns an ImagePolicy of the repository repo with choice.
func imagePolicy(ns, name, repo string, choice imagev1.ImagePolicyChoice) *imagev1.ImagePolicy {
	return &imagev1.ImagePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: repo},
			Policy: choice},
	}
}

func semverPolicy(r string) imagev1.ImagePolicyChoice {
	return imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: r}}
}

// create creates obj.
func create(g Gomega, obj client.Object) {
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
}

// ready waits until obj is Ready for its generation.
func ready[T check.Object](g Gomega, obj T) T {
	return testutil.WaitFor(g, env.Client, obj, func(o T) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) && o.GetObservedGeneration() == o.GetGeneration()
	})
}

// notReady waits until obj is not Ready with reason.
func notReady[T check.Object](g Gomega, obj T, reason string) T {
	return testutil.WaitFor(g, env.Client, obj, func(o T) bool {
		return conditions.IsFalse(o, meta.ReadyCondition) && conditions.Reason(o, meta.ReadyCondition) == reason
	})
}

// tagsResponse is the JSON of the tags API.
type tagsResponse struct {
	Image    string   `json:"image"`
	Revision string   `json:"revision"`
	Count    int      `json:"count"`
	Tags     []string `json:"tags"`
	Error    string   `json:"error"`
}

// tagsReader is the token of a service account that may get every
// ImageRepository and ImagePolicy, which getTags sends.
var tagsReader = sync.OnceValue(func() string {
	g := NewGomega(func(message string, _ ...int) { panic(message) })
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tags-reader-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	token := testutil.ServiceAccountToken(g, env.Config, ns.Name, "reader")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "tags-reader-"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{imagev1.GroupVersion.Group},
			Resources: []string{"imagerepositories", "imagepolicies"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: "reader"}}})).To(Succeed())
	return token
})

// getTags queries the tags API as a reader of every repository.
func getTags(g Gomega, path string) (int, tagsResponse) {
	return getTagsAs(g, tagsReader(), path)
}

// getTagsAs queries the tags API with token (none when empty).
func getTagsAs(g Gomega, token, path string) (int, tagsResponse) {
	req, err := http.NewRequest(http.MethodGet, tagsURL+path, nil)
	g.Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var body tagsResponse
	g.Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
	return resp.StatusCode, body
}

func numberedTags(prefix string, n int) []string {
	tags := make([]string, 0, n)
	for i := range n {
		tags = append(tags, fmt.Sprintf("%s%d", prefix, i))
	}
	return tags
}
