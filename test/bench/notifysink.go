package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
)

// maxNotificationBody bounds the body the sink reads of one notification.
const maxNotificationBody = 1 << 20

// resolvedPrefix and foldedLine are how a generic provider's message says
// that it resolves a failure, and how many events were folded into it
// (see notify.Text).
var (
	resolvedPrefix = "Resolved: "
	foldedLine     = regexp.MustCompile(`\n\(and (\d+) more like it\)$`)
)

// notification is what the sink records of one message a provider posted.
type notification struct {
	// At is when the sink received it.
	At time.Time
	// Kind, Name, Severity and Reason are the event's.
	Kind, Name, Severity, Reason string
	// Resolved tells that the message resolves a failure.
	Resolved bool
	// Folded is the number of other events folded into it.
	Folded int
}

// parseNotification reads the body a generic provider posts: an event
// (event.toolkit.fluxcd.io/v1beta1) whose message may start with
// "Resolved: " and end with "(and N more like it)".
func parseNotification(body []byte, at time.Time) (notification, error) {
	var e eventv1.Event
	if err := json.Unmarshal(body, &e); err != nil {
		return notification{}, fmt.Errorf("the body is not an event: %w", err)
	}
	if e.InvolvedObject.Kind == "" || e.Severity == "" {
		return notification{}, fmt.Errorf("the event names no object kind or severity")
	}
	n := notification{At: at, Kind: e.InvolvedObject.Kind, Name: e.InvolvedObject.Name, Severity: e.Severity, Reason: e.Reason,
		Resolved: strings.HasPrefix(e.Message, resolvedPrefix)}
	if m := foldedLine.FindStringSubmatch(e.Message); m != nil {
		n.Folded, _ = strconv.Atoi(m[1])
	}
	return n, nil
}

// NotificationCounts counts the messages a provider received.
type NotificationCounts struct {
	// Messages is the number of messages.
	Messages int `json:"messages"`
	// Errors and Info split them by the event's severity, the resolved
	// messages apart.
	Errors int `json:"errors"`
	Info   int `json:"info"`
	// Resolved counts the messages that resolve a failure sent before.
	Resolved int `json:"resolved"`
	// Folded adds up the events that the messages say were folded into
	// them ("and N more like it"): the events they stand for besides
	// themselves.
	Folded int `json:"folded"`
}

// tally counts ns; byWhat lists the error and resolved messages by kind
// and reason, "Kustomization BuildFailed=3(+996 folded)", sorted.
func tally(ns []notification) (c NotificationCounts, byWhat []string) {
	type group struct{ n, folded int }
	groups := map[string]*group{}
	for _, n := range ns {
		c.Messages++
		c.Folded += n.Folded
		key := n.Kind + " " + n.Reason
		switch {
		case n.Resolved:
			c.Resolved++
			key = "resolved " + key
		case n.Severity == eventv1.SeverityError:
			c.Errors++
		default:
			c.Info++
			continue
		}
		if groups[key] == nil {
			groups[key] = &group{}
		}
		groups[key].n++
		groups[key].folded += n.Folded
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		s := fmt.Sprintf("%s=%d", key, groups[key].n)
		if f := groups[key].folded; f > 0 {
			s += fmt.Sprintf("(+%d folded)", f)
		}
		byWhat = append(byWhat, s)
	}
	return c, byWhat
}

// notificationSink is a loopback HTTP server that stands for the service
// of a generic Provider: it records every event posted to it, answers 200,
// and refuses what is not an event with 400.
type notificationSink struct {
	srv *http.Server
	// URL is the sink's address, http://127.0.0.1:PORT/.
	URL string

	mu       sync.Mutex
	received []notification
	refused  int
}

// startNotificationSink starts a sink on a free loopback port.
func startNotificationSink() (*notificationSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &notificationSink{URL: "http://" + ln.Addr().String() + "/"}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// ServeHTTP records a POSTed event.
func (s *notificationSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an event", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxNotificationBody))
	if err == nil {
		var n notification
		if n, err = parseNotification(body, time.Now()); err == nil {
			s.mu.Lock()
			s.received = append(s.received, n)
			s.mu.Unlock()
			return
		}
	}
	s.mu.Lock()
	s.refused++
	s.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

// Len returns the number of notifications received so far: a mark from
// which Since counts.
func (s *notificationSink) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.received)
}

// Since returns the notifications received after mark, a Len.
func (s *notificationSink) Since(mark int) []notification {
	return s.Between(mark, s.Len())
}

// Between returns the notifications received after mark from and up to
// mark to.
func (s *notificationSink) Between(from, to int) []notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	to = min(to, len(s.received))
	return slices.Clone(s.received[min(from, to):to])
}

// Refused returns the number of requests that were not events.
func (s *notificationSink) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// waitQuiet waits until no notification has come for quiet, or for bound
// at most, so that the messages the dispatcher queued are counted in the
// phase that caused them.
func (s *notificationSink) waitQuiet(ctx context.Context, quiet, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	last, lastAt := s.Len(), time.Now()
	for time.Now().Before(deadline) && time.Since(lastAt) < quiet {
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
		if n := s.Len(); n != last {
			last, lastAt = n, time.Now()
		}
	}
	return nil
}

// Close stops the sink.
func (s *notificationSink) Close() { _ = s.srv.Close() }
