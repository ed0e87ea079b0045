package image

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/conditions/check"
	gatingctrl "github.com/windlass-dev/windlass/internal/controller/gating"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/registry"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

var (
	env *testenv.Environment
	// tagsURL is the base URL of the tests' tags server (TagsHandler).
	tagsURL string
	// store is the tag store of the tests' controllers.
	store *registry.Store
	// logs holds what the controllers log.
	logs *testutil.Logs
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, startControllers))
}

// startControllers runs the three image reconcilers, the tags server and
// the Gate controller against the test control plane.
func startControllers(ctx context.Context, e *testenv.Environment) error {
	logs = testutil.CaptureLogs()
	dir, err := os.MkdirTemp("", "windlass-image-")
	if err != nil {
		return err
	}
	if store, err = registry.NewStore(dir); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	opts := reconcile.ControllerOptions{
		MaxConcurrentReconciles: 4,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](100*time.Millisecond, 2*time.Second),
	}
	events := &event.Recorder{Kubernetes: mgr.GetEventRecorder("image-reflector-controller")}
	repos := &ImageRepositoryReconciler{Client: mgr.GetClient(), Store: store, Events: events, AllowInsecureHTTP: true}
	if err := repos.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	policies := &ImagePolicyReconciler{Client: mgr.GetClient(), Store: store, Events: events, AllowInsecureHTTP: true,
		DependencyRequeue: time.Second}
	if err := policies.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	automations := &ImageUpdateAutomationReconciler{Client: mgr.GetClient(), AllowInsecureHTTP: true,
		Events: &event.Recorder{Kubernetes: mgr.GetEventRecorder("image-automation-controller")}}
	if err := automations.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	gates := &gatingctrl.GateReconciler{Client: mgr.GetClient()}
	if err := gates.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	tagsURL = httptest.NewServer(TagsHandler(mgr.GetClient(), store)).URL
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

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

// getTags queries the tags API.
func getTags(g Gomega, path string) (int, tagsResponse) {
	resp, err := http.Get(tagsURL + path)
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
