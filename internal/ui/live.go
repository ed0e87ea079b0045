package ui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/windlass-dev/windlass/internal/kinds"
)

// settle is how long the changes of a burst are gathered into one
// notice: a page reloads at most this often.
const settle = 200 * time.Millisecond

// Changes tells the open pages that an object changed, from the events of
// the shared informers: no page asks the API server anything.
type Changes struct {
	mu      sync.Mutex
	waiting map[chan struct{}]bool
	count   atomic.Uint64
}

// Count returns how many changes there were.
func (c *Changes) Count() uint64 {
	return c.count.Load()
}

// NewChanges returns Changes fed by the informers of ks in informers.
func NewChanges(ctx context.Context, informers cache.Informers, ks []kinds.Kind) (*Changes, error) {
	c := &Changes{waiting: map[chan struct{}]bool{}}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.notify() },
		UpdateFunc: func(any, any) { c.notify() },
		DeleteFunc: func(any) { c.notify() },
	}
	for _, k := range ks {
		informer, err := informers.GetInformer(ctx, k.New())
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", k.Kind, err)
		}
		if _, err := informer.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// notify wakes every page that waits, without blocking.
func (c *Changes) notify() {
	c.count.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.waiting {
		c.wake(ch)
	}
}

// wake makes ch receive, as a change would.
func (c *Changes) wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// subscribe returns a channel that receives after each change, and the
// function that ends the subscription.
func (c *Changes) subscribe() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.waiting[ch] = true
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.waiting, ch)
		c.mu.Unlock()
	}
}

// events serves server-sent events: "changed" after a change, at most
// once per settle, until the page goes; at once when ?since (the count of
// changes a page was rendered after) is behind.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok || s.Changes == nil {
		s.fail(w, http.StatusNotFound, "no live updates here")
		return
	}
	changed, stop := s.Changes.subscribe()
	defer stop()
	if since, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64); err == nil && since != s.Changes.Count() {
		s.Changes.wake(changed) // a change came after the page read its objects
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, ": live\n\n")
	flusher.Flush()
	keepAlive := time.NewTicker(30 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			fmt.Fprint(w, ": still here\n\n")
		case <-changed:
			select {
			case <-time.After(settle):
			case <-r.Context().Done():
				return
			}
			drain(changed)
			fmt.Fprint(w, "event: changed\ndata: \n\n")
		}
		flusher.Flush()
	}
}

// drain empties ch of a notice that came while the burst settled.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}
