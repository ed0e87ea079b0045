package source

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/testenv"
)

var (
	env     *testenv.Environment
	storage *artifact.Storage
	// k8s is the manager's cached client, as the controller sees the world.
	k8s client.Client
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, startController))
}

// startController runs the GitRepository controller against the test
// control plane, with storage served on a loopback port.
func startController(ctx context.Context, e *testenv.Environment) error {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "windlass-storage-")
	if err != nil {
		return err
	}
	storage, err = artifact.New(dir, ln.Addr().String(), time.Minute, 2)
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, storage.Handler()) }()

	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  e.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	r := &GitRepositoryReconciler{
		Client:            mgr.GetClient(),
		EventRecorder:     mgr.GetEventRecorder("source-controller"),
		Storage:           storage,
		DependencyRequeue: time.Second,
	}
	err = r.SetupWithManager(ctx, mgr, GitRepositoryOptions{
		MaxConcurrentReconciles: 4,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[ctrlreconcile.Request](100*time.Millisecond, 2*time.Second),
	})
	if err != nil {
		return err
	}
	k8s = mgr.GetClient()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	return nil
}

// newGitRepository returns a GitRepository for url with a short interval.
func newGitRepository(ns, name, url string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{
			URL:      url,
			Interval: metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// waitFor returns the object once cond holds for it.
func waitFor(g *WithT, obj *sourcev1.GitRepository, cond func(*sourcev1.GitRepository) bool) *sourcev1.GitRepository {
	got := &sourcev1.GitRepository{}
	g.Eventually(func() bool {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			return false
		}
		return cond(got)
	}, timeout, interval).Should(BeTrue(), func() string {
		return fmt.Sprintf("conditions of %s: %+v", obj.Name, got.Status.Conditions)
	})
	checkInvariants(g, got)
	return got
}

// readyAt is a waitFor condition: Ready=True for the current generation.
func readyAt(revision string) func(*sourcev1.GitRepository) bool {
	return func(o *sourcev1.GitRepository) bool {
		return conditions.IsTrue(o, meta.ReadyCondition) &&
			o.Status.ObservedGeneration == o.Generation &&
			o.Status.Artifact != nil && (revision == "" || o.Status.Artifact.Revision == revision)
	}
}

// hasCondition is a waitFor condition on one condition's status and reason.
func hasCondition(conditionType string, status metav1.ConditionStatus, reason string) func(*sourcev1.GitRepository) bool {
	return func(o *sourcev1.GitRepository) bool {
		c := conditions.Get(o, conditionType)
		return c != nil && c.Status == status && c.Reason == reason
	}
}

// checkInvariants asserts the kstatus rules that every GitRepository
// status must keep.
func checkInvariants(g *WithT, obj *sourcev1.GitRepository) {
	g.Expect(obj.Status.ObservedGeneration).To(BeNumerically("<=", obj.Generation))
	if conditions.IsTrue(obj, meta.ReadyCondition) {
		g.Expect(conditions.IsTrue(obj, meta.StalledCondition)).To(BeFalse(), "Ready and Stalled")
		g.Expect(conditions.IsTrue(obj, meta.ReconcilingCondition)).To(BeFalse(), "Ready and Reconciling")
	}
	if conditions.IsTrue(obj, meta.StalledCondition) {
		g.Expect(conditions.IsTrue(obj, meta.ReconcilingCondition)).To(BeFalse(), "Stalled and Reconciling")
	}
	for _, c := range obj.Status.Conditions {
		g.Expect(c.ObservedGeneration).To(BeNumerically("<=", obj.Generation))
	}
}

// download fetches an artifact over HTTP and checks its digest.
func download(g *WithT, a *meta.Artifact) []byte {
	resp, err := http.Get(a.URL)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	digest, err := artifact.Digest(bytesReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(Equal(a.Digest))
	g.Expect(int64(len(body))).To(Equal(*a.Size))
	return body
}

// eventsFor returns the messages of the events about obj.
func eventsFor(g *WithT, obj client.Object) []string {
	var list corev1.EventList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var msgs []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == obj.GetName() {
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
	}
	return msgs
}
