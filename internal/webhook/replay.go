package webhook

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// MaxRequestAge is how far a timed request's time may be from the server's
// clock, either way: an older request is refused, so a captured one cannot
// be sent again later.
const MaxRequestAge = 5 * time.Minute

// DefaultMaxRemembered bounds the timed requests a ReplayGuard remembers
// per Receiver (a request is remembered until its time is MaxRequestAge
// old): 256, above the rate of any service that signs with a time.
const DefaultMaxRemembered = 256

// ErrBusy: a Receiver was sent more distinct timed requests within
// MaxRequestAge than a ReplayGuard remembers (HTTP 429); its other
// requests are taken again once the older ones are too old to replay.
var ErrBusy = errors.New("too many webhook requests")

// ReplayGuard refuses a timed request (see TimestampHeader) whose time is
// more than MaxRequestAge from now, or whose signature it has seen before
// within that time. It remembers at most MaxPerReceiver requests for each
// Receiver, so that one Receiver's traffic never costs another's, and
// forgets a request once its time is too old for it to be taken again. A
// request without a time passes: nothing in it can tell a replay.
type ReplayGuard struct {
	// MaxPerReceiver bounds the requests remembered per Receiver; zero
	// means DefaultMaxRemembered.
	MaxPerReceiver int

	mu sync.Mutex
	// seen maps a Receiver to the signatures of its timed requests, each
	// to when it may be forgotten.
	seen map[string]map[string]time.Time
	// swept is when every Receiver's lapsed requests were last dropped.
	swept time.Time
}

// Admit checks res, a verified request to the Receiver receiver (any key
// that names one Receiver, such as its UID), at now, and remembers it. It
// returns an ErrUnauthorized for a request too old, too far ahead, or
// seen before, and ErrBusy when the Receiver's share is full.
func (g *ReplayGuard) Admit(receiver string, res Result, now time.Time) error {
	if res.SignedAt.IsZero() {
		return nil
	}
	if age := now.Sub(res.SignedAt); age > MaxRequestAge || age < -MaxRequestAge {
		return unauthorized("the request was signed at %s, more than %s from the server's time: sign each request when it is sent",
			res.SignedAt.UTC().Format(time.RFC3339), MaxRequestAge)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]map[string]time.Time{}
	}
	if now.Sub(g.swept) > MaxRequestAge {
		g.forgetLapsed(now)
	}
	seen := g.seen[receiver]
	if _, replayed := seen[res.signature]; replayed {
		return unauthorized("the request was sent before: a timed request is taken once")
	}
	if seen == nil {
		seen = map[string]time.Time{}
		g.seen[receiver] = seen
	}
	if len(seen) >= g.max() {
		g.forgetLapsed(now)
		if len(seen) >= g.max() {
			return fmt.Errorf("%w: %d timed requests within %s", ErrBusy, len(seen), MaxRequestAge)
		}
	}
	seen[res.signature] = res.SignedAt.Add(MaxRequestAge)
	return nil
}

// forgetLapsed drops the requests too old to be taken again, and the
// Receivers left with none (those of deleted Receivers among them).
func (g *ReplayGuard) forgetLapsed(now time.Time) {
	g.swept = now
	for receiver, seen := range g.seen {
		for sig, until := range seen {
			if now.After(until) {
				delete(seen, sig)
			}
		}
		if len(seen) == 0 {
			delete(g.seen, receiver)
		}
	}
}

func (g *ReplayGuard) max() int {
	if g.MaxPerReceiver > 0 {
		return g.MaxPerReceiver
	}
	return DefaultMaxRemembered
}
