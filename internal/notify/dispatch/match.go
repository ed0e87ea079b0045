package dispatch

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"time"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// maxGroups bounds the flood groups of a rule; the events of further
// reasons share one group.
const maxGroups = 256

// overflowGroup is the group of the reasons past maxGroups.
const overflowGroup = "\x00overflow"

// foldGroup is the error events of one rule and reason in one window.
type foldGroup struct {
	start time.Time
	sent  int
	held  int
	last  notify.Message
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
		if resolving && d.resolve(r, e, now) {
			continue
		}
		if !r.matches(e, obj.Labels) {
			continue
		}
		if d.duplicate(r, e, now) {
			d.stats.Deduplicated++
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
// FoldAfter of its reason in the window.
func (d *Dispatcher) fold(r *rule, m notify.Message, now time.Time) {
	reason := m.Reason
	if _, ok := r.groups[reason]; !ok && len(r.groups) >= maxGroups {
		reason = overflowGroup
	}
	g := r.groups[reason]
	if g != nil && d.windowEnded(g, now) {
		d.closeGroup(r, reason, g)
		g = nil
	}
	if g == nil {
		g = &foldGroup{start: now}
		r.groups[reason] = g
	}
	if g.sent < d.opts.FoldAfter {
		g.sent++
		d.send(r, m, now)
		return
	}
	g.held++
	g.last = m
	d.stats.Folded++
}

func (d *Dispatcher) windowEnded(g *foldGroup, now time.Time) bool {
	return !now.Before(g.start.Add(d.opts.Window))
}

// closeGroup forgets the group and sends its last held event, if any, for
// all those held.
func (d *Dispatcher) closeGroup(r *rule, reason string, g *foldGroup) {
	delete(r.groups, reason)
	if g.held == 0 {
		return
	}
	m := g.last
	m.Folded = g.held - 1
	d.send(r, m, d.opts.Now())
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
