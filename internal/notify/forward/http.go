package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/kubeauth"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
)

// Headers by which a Poster tells the Handler what the wire event does not
// carry: the object's labels (for matchLabels) and whether it is Ready
// (for resolved messages), so that the Handler needs no API request.
const (
	LabelsHeader = "X-Windlass-Object-Labels"
	ReadyHeader  = "X-Windlass-Object-Ready"
)

// Defaults of a Poster.
const (
	DefaultQueueSize   = 1000
	DefaultPostTimeout = 5 * time.Second
	DefaultAttempts    = 3
	DefaultBackoff     = time.Second
)

// MaxEventBytes bounds the body of one event the Handler reads: a message
// is at most eventv1.MaxMessageLength bytes, the rest is small.
const MaxEventBytes = 256 << 10

// postedEvent is one event waiting in a Poster's queue.
type postedEvent struct {
	wire   eventv1.Event
	labels map[string]string
	ready  bool
}

// Poster is an event.Sink for controllers that do not share a process with
// the notification controller: it POSTs each event, as the wire event, to
// the notification controller's event endpoint (--events-addr), from a
// bounded queue with retries. A slow or absent notification controller
// never slows a reconciler: when the queue is full, the oldest event is
// dropped and counted. It authenticates with the service-account token of
// Token, which the endpoint requires.
type Poster struct {
	// Sink builds the wire events (its Dispatcher is not used).
	Sink Sink
	// URL is the event endpoint.
	URL string
	// Client posts; a client with DefaultPostTimeout when nil.
	Client *http.Client
	// QueueSize bounds the events waiting (DefaultQueueSize when zero).
	QueueSize int
	// Attempts bounds the posts of one event (DefaultAttempts when zero).
	Attempts int
	// Backoff is the wait before the second attempt, doubled after each
	// (DefaultBackoff when zero).
	Backoff time.Duration
	// Token is the service-account token sent (Authorization: Bearer);
	// without one, the endpoint refuses every event.
	Token TokenSource
	// Log receives the events given up.
	Log logr.Logger

	mu      sync.Mutex
	queue   []postedEvent
	wake    chan struct{}
	dropped int64
	once    sync.Once
}

// Forward implements event.Sink: it queues the event and returns at once.
func (p *Poster) Forward(_ context.Context, obj client.Object, e event.Event) {
	wire, ok := p.Sink.Wire(obj, e)
	if !ok {
		return
	}
	p.init()
	size := p.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	p.mu.Lock()
	if len(p.queue) >= size {
		p.queue = p.queue[1:]
		p.dropped++
	}
	p.queue = append(p.queue, postedEvent{wire: wire, labels: obj.GetLabels(), ready: e.Type == event.TypeNormal && ready(obj)})
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Dropped returns how many events were dropped because the queue was full.
func (p *Poster) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *Poster) init() {
	p.once.Do(func() { p.wake = make(chan struct{}, 1) })
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica posts the events it records.
func (p *Poster) NeedLeaderElection() bool { return false }

// Start posts the queued events until ctx ends.
func (p *Poster) Start(ctx context.Context) error {
	p.init()
	if p.Token == nil {
		p.Log.Info("No service-account token to post events with: the event endpoint will refuse every event")
	}
	for {
		p.mu.Lock()
		var next postedEvent
		found := len(p.queue) > 0
		if found {
			next = p.queue[0]
			p.queue = p.queue[1:]
		}
		p.mu.Unlock()
		if !found {
			select {
			case <-ctx.Done():
				return nil
			case <-p.wake:
			}
			continue
		}
		if err := p.deliver(ctx, next); err != nil && ctx.Err() == nil {
			p.Log.Error(err, "Giving up an event", "object", next.wire.InvolvedObject.Kind+"/"+next.wire.InvolvedObject.Namespace+"/"+next.wire.InvolvedObject.Name)
		}
	}
}

// deliver posts ev, retrying with backoff.
func (p *Poster) deliver(ctx context.Context, ev postedEvent) error {
	attempts, backoff := p.Attempts, p.Backoff
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	var err error
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff *= 2
		}
		if err = p.post(ctx, ev); err == nil {
			return nil
		}
	}
	return err
}

func (p *Poster) post(ctx context.Context, ev postedEvent) error {
	body, err := json.Marshal(ev.wire)
	if err != nil {
		return err
	}
	labels, err := json.Marshal(ev.labels)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(LabelsHeader, string(labels))
	if ev.ready {
		req.Header.Set(ReadyHeader, "true")
	}
	if err := p.authorize(req); err != nil {
		return err
	}
	c := p.Client
	if c == nil {
		c = &http.Client{Timeout: DefaultPostTimeout}
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return answered(resp)
}

// authorize sets the service-account token of req, when the Poster has
// one.
func (p *Poster) authorize(req *http.Request) error {
	if p.Token == nil {
		return nil
	}
	token, err := p.Token.Token()
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return nil
}

// answered returns the error of an answer that is not a success.
func answered(resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("the event endpoint refused this process's token (%s): it takes the token of a service account "+
			"in the notification controller's --events-allowed-service-accounts", resp.Status)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("posting the event: %s", resp.Status)
	}
	return nil
}

// Handler is the notification controller's event endpoint: it
// authenticates the caller, then decodes the wire event of each POST
// (bounded) and dispatches it, with the labels and Ready hint of a
// Poster's headers.
type Handler struct {
	// Dispatcher receives the events.
	Dispatcher *dispatch.Dispatcher
	// Auth admits the callers; a Handler without one refuses every
	// request.
	Auth *kubeauth.TokenReviewer
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an event", http.StatusMethodNotAllowed)
		return
	}
	status := http.StatusUnauthorized
	if h.Auth != nil {
		_, status = h.Auth.Authenticate(r.Context(), r)
	}
	if status != http.StatusOK {
		refuse(w, status)
		return
	}
	h.serveEvent(w, r)
}

// refuse answers a request that was not authenticated with status.
func refuse(w http.ResponseWriter, status int) {
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="windlass events"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, http.StatusText(status), status)
}

// serveEvent dispatches the event of an authenticated request.
func (h *Handler) serveEvent(w http.ResponseWriter, r *http.Request) {
	ev, obj, err := decodeEvent(w, r)
	if err != nil {
		status := http.StatusBadRequest
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, err.Error(), status)
		return
	}
	h.Dispatcher.Dispatch(r.Context(), ev, obj)
	w.WriteHeader(http.StatusAccepted)
}

// decodeEvent reads the wire event of r and the object facts of its
// headers.
func decodeEvent(w http.ResponseWriter, r *http.Request) (eventv1.Event, dispatch.Object, error) {
	var ev eventv1.Event
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxEventBytes))
	if err != nil {
		return ev, dispatch.Object{}, err
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, dispatch.Object{}, errors.New("the body is not an event")
	}
	if ev.InvolvedObject.Kind == "" || ev.InvolvedObject.Name == "" || ev.Message == "" {
		return ev, dispatch.Object{}, errors.New("the event names no object or has no message")
	}
	obj := dispatch.Object{Ready: r.Header.Get(ReadyHeader) == "true"}
	if raw := r.Header.Get(LabelsHeader); raw != "" {
		if err := json.Unmarshal([]byte(raw), &obj.Labels); err != nil {
			return ev, dispatch.Object{}, fmt.Errorf("the %s header is not a JSON map", LabelsHeader)
		}
	}
	return ev, obj, nil
}
