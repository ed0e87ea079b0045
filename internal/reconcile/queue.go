package reconcile

import (
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The work queue of every Windlass controller is controller-runtime's
// priority queue, wrapped so that its workers never wait on it once it is
// shut down.
//
// In controller-runtime v0.24 the queue's goroutine that hands ready items
// to the workers sends each one on an unbuffered channel while it holds
// the queue's locks. When the queue shuts down, a worker waiting for an
// item may leave through the closed done channel instead of taking the
// item it was counted for: the send then blocks for ever, with the locks
// held, and so does every later Done or Get of a worker
// (kubernetes-sigs/controller-runtime issue 3538; the fix, PR 3540, is in
// v0.25.2, which needs Kubernetes 0.37). A worker that ends its run just
// after the shutdown never returns from Done, the controller never logs
// "All workers finished", and the manager waits its whole graceful
// shutdown period (30 s) before the process exits, holding its lease all
// that time. Only a queue that is shut down wedges, so stoppableQueue
// makes the calls that take those locks return once it is shut down,
// whether or not they have ended.

// newQueue returns the NewQueue of a controller's options: a priority
// queue, as controller-runtime makes by default, that log logs for
// (named after the controller), wrapped so that its workers never wait
// on it once it is shut down.
func newQueue(log logr.Logger) func(string, workqueue.TypedRateLimiter[ctrlreconcile.Request]) workqueue.TypedRateLimitingInterface[ctrlreconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[ctrlreconcile.Request]) workqueue.TypedRateLimitingInterface[ctrlreconcile.Request] {
		return newStoppableQueue(priorityqueue.New(name, func(o *priorityqueue.Opts[ctrlreconcile.Request]) {
			o.Log = log.WithValues("controller", name)
			o.RateLimiter = limiter
		}))
	}
}

// stoppableQueue is a priority queue whose Get, GetWithPriority, Done and
// Len return once it is shut down, even when the queue's own goroutine
// holds its locks for ever (see above): a Get then says it is shut down,
// Len says 0. What they left running ends when the queue lets it, or
// never; nothing is done with its result.
type stoppableQueue[T comparable] struct {
	priorityqueue.PriorityQueue[T]
	// stopped is closed once the queue is shut down.
	stopped chan struct{}
	stop    sync.Once
}

// newStoppableQueue wraps q, which must not be shut down yet.
func newStoppableQueue[T comparable](q priorityqueue.PriorityQueue[T]) *stoppableQueue[T] {
	return &stoppableQueue[T]{PriorityQueue: q, stopped: make(chan struct{})}
}

// ShutDown shuts the queue down: the workers waiting for an item, and
// those that call it from now on, are told so.
func (q *stoppableQueue[T]) ShutDown() {
	q.PriorityQueue.ShutDown()
	q.stop.Do(func() { close(q.stopped) })
}

// ShutDownWithDrain is ShutDown, as it is for the priority queue.
func (q *stoppableQueue[T]) ShutDownWithDrain() {
	q.ShutDown()
}

// queued is what GetWithPriority returns.
type queued[T comparable] struct {
	item     T
	priority int
	shutdown bool
}

// GetWithPriority waits for the next item and returns it with its
// priority; once the queue is shut down it returns shutdown true.
func (q *stoppableQueue[T]) GetWithPriority() (item T, priority int, shutdown bool) {
	got, ok := untilStopped(q.stopped, func() queued[T] {
		item, priority, shutdown := q.PriorityQueue.GetWithPriority()
		return queued[T]{item, priority, shutdown}
	})
	if !ok {
		return item, 0, true
	}
	return got.item, got.priority, got.shutdown
}

// Get is GetWithPriority without the priority.
func (q *stoppableQueue[T]) Get() (item T, shutdown bool) {
	item, _, shutdown = q.GetWithPriority()
	return item, shutdown
}

// Done marks the processing of item done.
func (q *stoppableQueue[T]) Done(item T) {
	untilStopped(q.stopped, func() struct{} {
		q.PriorityQueue.Done(item)
		return struct{}{}
	})
}

// Len returns how many items are ready; 0 once the queue is shut down.
func (q *stoppableQueue[T]) Len() int {
	n, _ := untilStopped(q.stopped, q.PriorityQueue.Len)
	return n
}

// untilStopped runs f and returns its result, true; or the zero value,
// false, as soon as stopped is closed, without waiting for f, which then
// runs on alone (its result dropped). Once stopped is closed, f does not
// run at all.
func untilStopped[V any](stopped <-chan struct{}, f func() V) (V, bool) {
	var zero V
	select {
	case <-stopped:
		return zero, false
	default:
	}
	result := make(chan V, 1)
	go func() { result <- f() }()
	select {
	case v := <-result:
		return v, true
	case <-stopped:
		return zero, false
	}
}
