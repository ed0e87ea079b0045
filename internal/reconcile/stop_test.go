package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Every Windlass controller's work queue is controller-runtime's priority
// queue (its default). In v0.24 that queue's goroutine handed ready items
// to the workers by an unbuffered send while it held the queue's locks: at
// shutdown a waiting worker could leave instead of taking its item, the
// send blocked for ever with the locks held, and so did every worker's
// later Done; the manager then waited its whole graceful shutdown period
// (30 s) before the process exited, its lease held
// (kubernetes-sigs/controller-runtime issue 3538, fixed in v0.25.2). These
// tests keep that from coming back.

// stopRounds is how many times the stop tests stop a busy queue: the
// queue of controller-runtime v0.24 wedged within a few rounds.
const stopRounds = 100

// stopGrace is how long the workers of a stopped queue may take to end.
const stopGrace = 5 * time.Second

// A queue shut down while many workers take, add and finish items lets
// every one of them go: none waits for ever in Get or Done.
func TestPriorityQueue_WorkersEndWhenItShutsDown(t *testing.T) {
	g := NewWithT(t)
	for round := range stopRounds {
		q := priorityqueue.New[int]("test")
		var taken atomic.Int64
		var workers sync.WaitGroup
		for range 20 {
			workers.Go(func() { churn(q, &taken) })
		}
		g.Eventually(taken.Load).Should(BeNumerically(">=", 200))
		q.ShutDown()
		g.Eventually(ended(&workers)).WithTimeout(stopGrace).Should(BeClosed(), func() string {
			return fmt.Sprintf("round %d: workers still wait on the queue:\n%s", round, goroutines())
		})
	}
}

// churn is a worker of q that adds an item, takes one, and says it is
// done with it, until q shuts down.
func churn(q priorityqueue.PriorityQueue[int], taken *atomic.Int64) {
	for {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(rand.IntN(3))}, rand.Int())
		item, _, shutdown := q.GetWithPriority()
		if shutdown {
			return
		}
		taken.Add(1)
		q.Done(item)
	}
}

// A controller stopped while its workers run through many ready objects
// stops: every worker ends, and Start with them, as the source controller
// must at SIGTERM with the sources of every namespace in its queue.
func TestController_StopsWhileItsWorkersAreBusy(t *testing.T) {
	g := NewWithT(t)
	for round := range stopRounds {
		b := &busy{}
		c, err := controller.NewTypedUnmanaged("busy", controller.Options{
			MaxConcurrentReconciles: 8,
			SkipNameValidation:      ptr.To(true),
			Reconciler:              b,
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Watch(source.Func(b.start))).To(Succeed())
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			_ = c.Start(ctx)
		}()
		g.Eventually(b.runs.Load).Should(BeNumerically(">=", 200))
		cancel()
		g.Eventually(stopped).WithTimeout(stopGrace).Should(BeClosed(), func() string {
			return fmt.Sprintf("round %d: the controller's workers did not end:\n%s", round, goroutines())
		})
	}
}

// busy is the reconciler and the source of a controller whose workers
// are never short of ready objects: the source queues 64 objects, and
// every run queues its object again, handed out again once the run is
// done.
type busy struct {
	runs  atomic.Int64
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]]
}

// start queues the objects.
func (b *busy) start(_ context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) error {
	b.queue.Store(&q)
	for i := range 64 {
		q.Add(ctrlreconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: strconv.Itoa(i)}})
	}
	return nil
}

// Reconcile counts the run and queues its object again.
func (b *busy) Reconcile(_ context.Context, req ctrlreconcile.Request) (ctrl.Result, error) {
	b.runs.Add(1)
	(*b.queue.Load()).Add(req)
	return ctrl.Result{}, nil
}

// ended returns a channel closed once wg's goroutines have ended.
func ended(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// goroutines returns the stacks of the process's goroutines, grouped.
func goroutines() string {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return err.Error()
	}
	return b.String()
}
