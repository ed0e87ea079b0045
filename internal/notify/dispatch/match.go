package dispatch

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/notify"
)

// maxGroups bounds the flood groups of a rule; the events of further
// causes share one group.
const maxGroups = 256

// overflowGroup is the group of the causes past maxGroups.
const overflowGroup = "\x00overflow"

// foldGroup is the error events of one rule and cause in one window.
type foldGroup struct {
	// start is when the window began.
	start time.Time
	// sent counts the messages sent in the window (the first events, or
	// the previous window's folded message).
	sent int
	// held are the events held back, by object: the latest of each,
	// numbered in the order they came. An object that recovers leaves it.
	held map[string]heldEvent
	// seq numbers the held events.
	seq int
	// unkept counts the events held past the bound of held: counted, not
	// kept (a recovery cannot take them out); unkeptLast is the latest.
	unkept     int
	unkeptLast heldEvent
}

// heldEvent is a message held back, numbered.
type heldEvent struct {
	msg notify.Message
	seq int
}

// hold holds m back in g, keeping at most max events by object.
func (g *foldGroup) hold(m notify.Message, max int) {
	g.seq++
	object := objectKey(m.Event)
	if _, ok := g.held[object]; ok || len(g.held) < max {
		if g.held == nil {
			g.held = map[string]heldEvent{}
		}
		g.held[object] = heldEvent{msg: m, seq: g.seq}
		return
	}
	g.unkept++
	g.unkeptLast = heldEvent{msg: m, seq: g.seq}
}

// latest returns the latest event held and how many objects' events are
// held (0: none).
func (g *foldGroup) latest() (notify.Message, int) {
	n := len(g.held) + g.unkept
	last := g.unkeptLast
	for _, h := range g.held {
		if h.seq > last.seq {
			last = h
		}
	}
	return last.msg, n
}

// eventKey identifies an event for one rule, for deduplication.
type eventKey [16]byte

// failureKey is an object whose failure a rule sent.
type failureKey struct{ rule, object string }

// Dispatch matches e against the rules and queues the messages to send.
// It returns at once: it makes no API request and never waits for a
// provider. Trace events are never forwarded.
func (d *Dispatcher) Dispatch(_ context.Context, e eventv1.Event, obj Object) {
	if e.Severity == eventv1.SeverityTrace {
		return
	}
	resolving := obj.Ready && e.Severity == eventv1.SeverityInfo
	now := d.opts.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen.forgetUpTo(now.Add(-d.opts.Window))
	for _, r := range d.rules {
		if resolving {
			r.unhold(e)
			if d.resolve(r, e, now) {
				continue
			}
		}
		if !r.matches(e, obj.Labels) {
			continue
		}
		if d.duplicate(r, e, now) {
			d.stats.Deduplicated++
			d.record(r.Provider, r.ProviderType, metrics.NotificationFolded)
			continue
		}
		m := notify.Message{Event: withMetadata(e, r.Metadata)}
		if e.Severity == eventv1.SeverityError && !r.NoFold {
			d.fold(r, m, now)
			continue
		}
		d.send(r, m, now)
	}
}

// matches tells whether the rule forwards e, an event of an object with
// labels.
func (r *rule) matches(e eventv1.Event, labels map[string]string) bool {
	if r.Severity == SeverityError && e.Severity != eventv1.SeverityError {
		return false
	}
	if !slices.ContainsFunc(r.Sources, func(s Source) bool { return r.sourceMatches(s, e, labels) }) {
		return false
	}
	if len(r.Inclusion) > 0 && !anyMatches(r.Inclusion, e.Message) {
		return false
	}
	return !anyMatches(r.Exclusion, e.Message)
}

func anyMatches(res []*regexp.Regexp, s string) bool {
	return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(s) })
}

func (r *rule) sourceMatches(s Source, e eventv1.Event, labels map[string]string) bool {
	o := e.InvolvedObject
	namespace := s.Namespace
	if namespace == "" {
		namespace = r.Namespace
	}
	if s.Kind != o.Kind || namespace != o.Namespace || (s.Name != "*" && s.Name != o.Name) {
		return false
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// duplicate tells whether the rule sent e within the window, and
// remembers it.
func (d *Dispatcher) duplicate(r *rule, e eventv1.Event, now time.Time) bool {
	key := keyOf(r.Key, e)
	if d.seen.has(key) {
		return true
	}
	d.seen.add(key, now)
	return false
}

// keyOf hashes what makes an event the same for one rule: its object,
// severity, reason, message and metadata (hence revision).
func keyOf(ruleKey string, e eventv1.Event) eventKey {
	h := fnv.New128a()
	write := func(s string) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(s)))
		_, _ = h.Write([]byte(s))
	}
	o := e.InvolvedObject
	for _, s := range []string{ruleKey, o.Kind, o.Namespace, o.Name, e.Severity, e.Reason, e.Message} {
		write(s)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Metadata)) {
		write(k)
		write(e.Metadata[k])
	}
	var key eventKey
	h.Sum(key[:0])
	return key
}

// withMetadata returns e with the rule's metadata added to a copy of its
// own; the event's keys keep their values.
func withMetadata(e eventv1.Event, extra map[string]string) eventv1.Event {
	if len(extra) == 0 {
		return e
	}
	meta := make(map[string]string, len(e.Metadata)+len(extra))
	maps.Copy(meta, extra)
	maps.Copy(meta, e.Metadata)
	e.Metadata = meta
	return e
}

// fold sends the error message m, or holds it back when the rule sent
// FoldAfter messages of its cause in the window.
func (d *Dispatcher) fold(r *rule, m notify.Message, now time.Time) {
	key := causeOf(m.Event)
	if _, ok := r.groups[key]; !ok && len(r.groups) >= maxGroups {
		key = overflowGroup
	}
	g := r.groups[key]
	if g != nil && d.windowEnded(g, now) {
		g = d.closeGroup(r, key, g, now)
	}
	if g == nil {
		g = &foldGroup{start: now}
		r.groups[key] = g
	}
	if g.sent < d.opts.FoldAfter {
		g.sent++
		d.send(r, m, now)
		return
	}
	g.hold(m, d.opts.MaxRemembered)
	d.stats.Folded++
	d.record(r.Provider, r.ProviderType, metrics.NotificationFolded)
}

// causeOf is what the error events of one flood share: their reason, and
// their message without the name of their own object (the 1000
// Kustomizations behind a failing source share both). Unrelated failures
// that share a reason differ by their message, so neither waits for the
// other's window.
func causeOf(e eventv1.Event) string {
	return e.Reason + "\x00" + withoutName(e.Message, e.InvolvedObject.Name)
}

// withoutName returns msg with each occurrence of name that stands on its
// own (not inside a longer name) replaced by a NUL byte.
func withoutName(msg, name string) string {
	if name == "" {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, name)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		end := i + len(name)
		if (i == 0 || !nameByte(msg[i-1])) && (end == len(msg) || !nameByte(msg[end])) {
			b.WriteString(msg[:i])
			b.WriteByte(0)
		} else {
			b.WriteString(msg[:end])
		}
		msg = msg[end:]
	}
}

// nameByte tells whether c may continue an object's name (a dot may, but
// it also ends sentences, so it does not count).
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (d *Dispatcher) windowEnded(g *foldGroup, now time.Time) bool {
	return !now.Before(g.start.Add(d.opts.Window))
}

// closeGroup ends the group's window. When it held events, it sends the
// latest for them all (Message.Folded counting the others) and returns
// the group of the next window, which that message counts against: a
// flood that goes on costs one message per window, not two at each
// window's turn. Otherwise the group is forgotten and it returns nil.
func (d *Dispatcher) closeGroup(r *rule, key string, g *foldGroup, now time.Time) *foldGroup {
	delete(r.groups, key)
	m, n := g.latest()
	if n == 0 {
		return nil
	}
	m.Folded = n - 1
	d.send(r, m, now)
	next := &foldGroup{start: now, sent: 1}
	r.groups[key] = next
	return next
}

// unhold drops the object of e, which recovered, from the events the
// rule's groups hold: its failure is over, and no message will say it.
func (r *rule) unhold(e eventv1.Event) {
	object := objectKey(e)
	for _, g := range r.groups {
		delete(g.held, object)
	}
}

// resolve sends e as resolving the failure the rule sent for its object,
// and forgets the failure. It tells whether there was one.
func (d *Dispatcher) resolve(r *rule, e eventv1.Event, now time.Time) bool {
	key := failureKey{rule: r.Key, object: objectKey(e)}
	if !d.failed.has(key) {
		return false
	}
	d.failed.remove(key)
	d.seen.add(keyOf(r.Key, e), now)
	d.stats.Resolved++
	d.enqueue(r, notify.Message{Event: withMetadata(e, r.Metadata), Resolves: true})
	return true
}

// send queues m for the rule's provider, remembering a failure.
func (d *Dispatcher) send(r *rule, m notify.Message, now time.Time) {
	if m.Severity == eventv1.SeverityError {
		d.failed.add(failureKey{rule: r.Key, object: objectKey(m.Event)}, now)
	}
	d.enqueue(r, m)
}

func objectKey(e eventv1.Event) string {
	o := e.InvolvedObject
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}
