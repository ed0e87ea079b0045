package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/redact"
)

// maxBackoff bounds the wait between two posts of a message.
const maxBackoff = time.Minute

// queue is the messages waiting for one provider, oldest first.
type queue struct {
	key   string
	items []delivery
	// wake tells the worker that items were added.
	wake chan struct{}
	// closed tells the worker to stop once the queue is empty: no rule
	// uses the provider any more.
	closed bool
}

// delivery is a message and the notifier that posts it, with the
// Provider whose metrics count it.
type delivery struct {
	notifier     notify.Notifier
	msg          notify.Message
	rule         string
	provider     types.NamespacedName
	providerType string
}

// Run runs the workers that post the queued messages, and closes the
// windows of folded floods every FlushInterval, until ctx ends; then it
// waits for the workers (a post in flight sees ctx end) and returns nil.
// Messages still queued, and floods not yet closed, are lost. A
// Dispatcher runs once.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return errors.New("the dispatcher is already running or has run")
	}
	d.started, d.running, d.runCtx = true, true, ctx
	for _, q := range d.queues {
		d.startWorker(q)
	}
	d.mu.Unlock()

	ticker := time.NewTicker(d.opts.FlushInterval)
	defer ticker.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-ticker.C:
			d.Flush()
		}
	}
	d.mu.Lock()
	d.running = false
	d.mu.Unlock()
	d.workers.Wait()
	return nil
}

// enqueue adds m to the queue of the rule's provider, dropping the oldest
// message when it is full. d.mu is held.
func (d *Dispatcher) enqueue(r *rule, m notify.Message) {
	q := d.queues[r.ProviderKey]
	if q == nil {
		q = &queue{key: r.ProviderKey, wake: make(chan struct{}, 1)}
		d.queues[r.ProviderKey] = q
		if d.running {
			d.startWorker(q)
		}
	}
	q.closed = false
	if len(q.items) >= d.opts.QueueSize {
		dropped := q.items[0]
		q.items[0] = delivery{}
		q.items = q.items[1:]
		d.stats.Dropped++
		d.record(dropped.provider, dropped.providerType, metrics.NotificationFailed)
	}
	q.items = append(q.items, delivery{notifier: r.Notifier, msg: m, rule: r.Key, provider: r.Provider, providerType: r.ProviderType})
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// closeUnusedQueues tells the workers of providers that no rule uses any
// more to stop once their queue is empty. d.mu is held.
func (d *Dispatcher) closeUnusedQueues() {
	used := map[string]bool{}
	for _, r := range d.rules {
		used[r.ProviderKey] = true
	}
	for key, q := range d.queues {
		if !used[key] {
			q.closed = true
			select {
			case q.wake <- struct{}{}:
			default:
			}
		}
	}
}

// startWorker starts the worker of q. d.mu is held and d.running.
func (d *Dispatcher) startWorker(q *queue) {
	d.workers.Add(1)
	go d.work(d.runCtx, q)
}

// work posts the messages of q until ctx ends or q is closed and empty.
func (d *Dispatcher) work(ctx context.Context, q *queue) {
	defer d.workers.Done()
	for ctx.Err() == nil {
		item, ok, stop := d.next(q)
		switch {
		case stop:
			return
		case ok:
			d.deliver(ctx, item)
			continue
		}
		select {
		case <-ctx.Done():
		case <-q.wake:
		}
	}
}

// next takes the oldest message of q. stop tells that q is closed and
// empty: it is forgotten and its worker must stop.
func (d *Dispatcher) next(q *queue) (item delivery, ok, stop bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(q.items) > 0 {
		item = q.items[0]
		q.items[0] = delivery{}
		q.items = q.items[1:]
		return item, true, false
	}
	if q.closed {
		if d.queues[q.key] == q {
			delete(d.queues, q.key)
		}
		return delivery{}, false, true
	}
	return delivery{}, false, false
}

// deliver posts item, retrying a retryable failure with exponential
// backoff up to Attempts posts.
func (d *Dispatcher) deliver(ctx context.Context, item delivery) {
	wait := d.opts.Backoff
	for attempt := 1; ; attempt++ {
		err := d.post(ctx, item)
		if err == nil {
			d.done(item, metrics.NotificationSent, func(s *Stats) { s.Sent++ })
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt >= d.opts.Attempts || !retryable(err) {
			d.done(item, metrics.NotificationFailed, func(s *Stats) { s.Failed++ })
			d.opts.Log.Error(redact.Error(err), "Giving up sending a notification", "Alert", item.rule,
				"object", notify.ObjectID(item.msg), "attempts", attempt)
			return
		}
		d.count(func(s *Stats) { s.Retried++ })
		if !d.sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, maxBackoff)
	}
}

// post posts item once, within PostTimeout; a panic of the notifier is
// an error.
func (d *Dispatcher) post(ctx context.Context, item delivery) (err error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.PostTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the notifier panicked: %v", p)
		}
	}()
	return item.notifier.Post(ctx, item.msg)
}

func (d *Dispatcher) count(f func(*Stats)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.stats)
}

// done counts the end of item's delivery: in the stats with f, and in the
// metrics with result.
func (d *Dispatcher) done(item delivery, result string, f func(*Stats)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.stats)
	d.record(item.provider, item.providerType, result)
}

// retryable tells whether a post that failed with err may succeed later:
// the error says so (notify.StatusError: 408, 429, 5xx), or it is a
// network error or a timeout.
func retryable(err error) bool {
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// sleep waits for d or the end of ctx, and tells whether ctx goes on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
