// Package dispatch is the heart of Windlass's alerting: it matches the
// events of every controller against the Alerts (as Rules), then
// deduplicates them, folds floods, remembers failures to send "resolved"
// messages, and hands the Messages to Notifiers through one bounded queue
// per provider, with retries, so that a slow provider never blocks the
// caller.
//
// Dispatch takes the lock of the dispatcher, matches and enqueues: it makes
// no API request and never waits for a provider. The workers that post
// run while Run runs.
//
// What a rule sends, for each event it matches:
//   - Duplicates: the same event (object, severity, reason, message and
//     metadata, hence revision) is sent at most once per Window.
//   - Floods: error events are grouped by rule and cause: their reason,
//     and their message without their own object's name (the events of
//     1000 Kustomizations failing because their source fails share both;
//     unrelated failures differ by their message). In a group, the first
//     FoldAfter events of a window (one, by default) are sent at once; the
//     later ones are held back, by object, and when the window closes the
//     latest is sent with Message.Folded counting the others. That message
//     opens the next window and counts against it, so a flood that goes on
//     costs a provider at most FoldAfter messages per cause per window,
//     however long it lasts, and the messages sent, with their Folded
//     counts, account for every object that failed. An object that recovers while its
//     failure is held back leaves the group: no message reports a failure
//     that is over.
//   - Resolved: the dispatcher remembers, per rule, the objects whose
//     failure it sent (on their own or as a flood's last). When an info
//     event comes for such an object with Object.Ready, the rule sends it
//     once with Message.Resolves, whatever its severity and filters (the
//     on-call provider must hear it), and forgets the failure. An object
//     whose failure was folded into another's message gets no resolved
//     message of its own.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/notify"
)

// Severities of a Rule.
const (
	// SeverityInfo forwards info and error events.
	SeverityInfo = "info"
	// SeverityError forwards error events, and the resolved messages of
	// the failures it sent.
	SeverityError = "error"
)

// Defaults of Options.
const (
	// DefaultWindow is the deduplication and folding window.
	DefaultWindow = 5 * time.Minute
	// DefaultFoldAfter is how many messages of one cause a rule sends per
	// window: the first failure at once, the others folded into one
	// message when the window closes.
	DefaultFoldAfter = 1
	// DefaultQueueSize bounds the queue of each provider.
	DefaultQueueSize = 100
	// DefaultAttempts bounds the posts of one message.
	DefaultAttempts = 4
	// DefaultBackoff is the wait before the first retry.
	DefaultBackoff = 2 * time.Second
	// DefaultPostTimeout bounds one post.
	DefaultPostTimeout = 30 * time.Second
	// DefaultFlushInterval is how often Run closes the folding windows.
	DefaultFlushInterval = 10 * time.Second
	// DefaultMaxRemembered bounds the remembered events and failures.
	DefaultMaxRemembered = 10000
)

// Source selects the objects whose events a rule forwards.
type Source struct {
	// Kind is the object's kind: "Kustomization".
	Kind string
	// Name is the object's name, or "*" for every name.
	Name string
	// Namespace is the object's namespace; empty means the rule's.
	Namespace string
	// MatchLabels, when set, must all be among the object's labels.
	MatchLabels map[string]string
}

// Rule is one Alert: which events go to which provider.
type Rule struct {
	// Key names the rule: the Alert's "namespace/name".
	Key string
	// Namespace is the Alert's namespace, that of Sources without one.
	Namespace string
	// Sources select the objects; an event matches when one matches.
	Sources []Source
	// Severity is SeverityInfo (or empty) or SeverityError.
	Severity string
	// Inclusion, when set, are regexes of which one at least must match
	// the event's message.
	Inclusion []*regexp.Regexp
	// Exclusion are regexes of which none may match the event's message.
	Exclusion []*regexp.Regexp
	// Metadata is added to the event's metadata (the Alert's
	// eventMetadata, and its summary under "summary"). A key the event
	// already has keeps the event's value, as the reference documents.
	Metadata map[string]string
	// NoFold sends every error event on its own, for providers where
	// each object matters (commit statuses).
	NoFold bool
	// Notifier posts the rule's messages.
	Notifier notify.Notifier
	// ProviderKey names the Provider ("namespace/name"): the rules of
	// one provider share its queue.
	ProviderKey string
	// Provider names the Provider object, and ProviderType is its
	// spec.type: the labels of the rule's notifications in
	// windlass_notifications_total.
	Provider     types.NamespacedName
	ProviderType string
}

// Object is what the caller knows of an event's object, from its cache.
type Object struct {
	// Labels are the object's labels, for Source.MatchLabels.
	Labels map[string]string
	// Ready tells that the object is Ready now. An info event of a Ready
	// object resolves the failure the dispatcher sent before.
	Ready bool
}

// Options tune a Dispatcher; zero fields take the defaults.
type Options struct {
	// Window is how long the same event is sent once, and how long a
	// flood is folded (DefaultWindow).
	Window time.Duration
	// FoldAfter is how many messages of one cause a rule sends per window
	// before it folds the others (DefaultFoldAfter).
	FoldAfter int
	// QueueSize bounds each provider's queue; when it is full the oldest
	// message is dropped (DefaultQueueSize).
	QueueSize int
	// Attempts bounds the posts of one message (DefaultAttempts).
	Attempts int
	// Backoff is the wait before the first retry; it doubles at each
	// retry (DefaultBackoff).
	Backoff time.Duration
	// PostTimeout bounds one post (DefaultPostTimeout).
	PostTimeout time.Duration
	// FlushInterval is how often Run closes the windows of folded floods
	// (DefaultFlushInterval).
	FlushInterval time.Duration
	// MaxRemembered bounds the events remembered for deduplication, and
	// the failures remembered for resolved messages; past it the oldest
	// are forgotten (DefaultMaxRemembered).
	MaxRemembered int
	// Now is the clock (time.Now).
	Now func() time.Time
	// Log is where failed deliveries are logged.
	Log logr.Logger
}

// Stats counts what the dispatcher did, for tests. The metrics count the
// same per Provider (windlass_notifications_total): Sent as sent,
// Folded and Deduplicated as folded, Failed and Dropped as failed.
type Stats struct {
	// Sent counts the messages providers took.
	Sent int64
	// Folded counts the error events held back by folding (the latest of
	// each window is then sent for them all).
	Folded int64
	// Deduplicated counts the events not sent because the same one was
	// within the window.
	Deduplicated int64
	// Dropped counts the messages dropped because their queue was full.
	Dropped int64
	// Failed counts the messages given up on.
	Failed int64
	// Retried counts the posts sent again.
	Retried int64
	// Resolved counts the resolved messages queued.
	Resolved int64
}

// Dispatcher matches events against rules and delivers the messages.
type Dispatcher struct {
	opts Options

	mu      sync.Mutex
	rules   map[string]*rule
	seen    *boundedSet[eventKey]
	failed  *boundedSet[failureKey]
	queues  map[string]*queue
	running bool
	started bool
	runCtx  context.Context
	workers sync.WaitGroup
	stats   Stats
	// sleep waits between the posts of a message (a test records the
	// waits instead).
	sleep func(ctx context.Context, d time.Duration) bool
	// gone are the Providers deleted (ForgetProvider), whose late
	// deliveries are not counted.
	gone *boundedSet[types.NamespacedName]
}

// rule is a Rule with the state of its folded floods.
type rule struct {
	Rule
	groups map[string]*foldGroup
}

// New returns a Dispatcher with opts; its workers run while Run runs.
func New(opts Options) *Dispatcher {
	opts = withDefaults(opts)
	return &Dispatcher{
		opts:   opts,
		rules:  map[string]*rule{},
		seen:   newBoundedSet[eventKey](opts.MaxRemembered),
		failed: newBoundedSet[failureKey](opts.MaxRemembered),
		gone:   newBoundedSet[types.NamespacedName](opts.MaxRemembered),
		queues: map[string]*queue{},
		sleep:  sleep,
	}
}

func withDefaults(o Options) Options {
	setDefault(&o.Window, DefaultWindow)
	setDefault(&o.FoldAfter, DefaultFoldAfter)
	setDefault(&o.QueueSize, DefaultQueueSize)
	setDefault(&o.Attempts, DefaultAttempts)
	setDefault(&o.Backoff, DefaultBackoff)
	setDefault(&o.PostTimeout, DefaultPostTimeout)
	setDefault(&o.FlushInterval, DefaultFlushInterval)
	setDefault(&o.MaxRemembered, DefaultMaxRemembered)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// SetRule adds the rule, or replaces the one with its key. A replaced rule
// keeps its windows, floods and remembered failures.
func (d *Dispatcher) SetRule(r Rule) error {
	if err := validate(r); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	groups := map[string]*foldGroup{}
	if old, ok := d.rules[r.Key]; ok {
		groups = old.groups
	}
	d.rules[r.Key] = &rule{Rule: r, groups: groups}
	d.gone.remove(r.Provider) // created again, it counts anew
	d.closeUnusedQueues()
	return nil
}

func validate(r Rule) error {
	switch {
	case r.Key == "":
		return errors.New("a rule needs a key")
	case r.Notifier == nil:
		return fmt.Errorf("rule %s has no notifier", r.Key)
	case r.Severity != "" && r.Severity != SeverityInfo && r.Severity != SeverityError:
		return fmt.Errorf("rule %s: invalid severity %q: it must be %q or %q", r.Key, r.Severity, SeverityInfo, SeverityError)
	}
	return nil
}

// DeleteRule removes the rule with key, its floods and its remembered
// failures. Messages already queued are still delivered.
func (d *Dispatcher) DeleteRule(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.rules, key)
	d.failed.removeIf(func(k failureKey) bool { return k.rule == key })
	d.closeUnusedQueues()
}

// ProviderOf returns the ProviderKey of the rule with key, if there is
// one.
func (d *Dispatcher) ProviderOf(key string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.rules[key]
	if !ok {
		return "", false
	}
	return r.ProviderKey, true
}

// ForgetProvider drops the series of the deleted Provider key from
// windlass_notifications_total, and keeps the messages still queued for it
// from bringing them back. A rule set for the Provider again (it was
// created again) counts anew.
func (d *Dispatcher) ForgetProvider(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gone.add(key, d.opts.Now())
	metrics.ForgetProvider(key)
}

// record counts a notification of the Provider key, of type typ, with
// result in windlass_notifications_total, unless the Provider is gone.
// d.mu is held.
func (d *Dispatcher) record(key types.NamespacedName, typ, result string) {
	if !d.gone.has(key) {
		metrics.RecordNotification(key, typ, result)
	}
}

// Stats returns the counts so far.
func (d *Dispatcher) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Flush closes the windows of folded floods that have ended, queueing one
// message for each. Run calls it every FlushInterval.
func (d *Dispatcher) Flush() {
	now := d.opts.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.rules {
		for key, g := range r.groups {
			if d.windowEnded(g, now) {
				d.closeGroup(r, key, g, now)
			}
		}
	}
	d.seen.forgetUpTo(now.Add(-d.opts.Window))
}
