package kubeauth

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/client-go/util/flowcontrol"
)

// Defaults of the verdicts a reviewer keeps.
const (
	// DefaultAdmitTTL is how long an admission is trusted without a new
	// review.
	DefaultAdmitTTL = time.Minute
	// DefaultRefuseTTL is how long a refusal holds without a new review.
	DefaultRefuseTTL = 10 * time.Second
	// DefaultMaxCached bounds the verdicts kept.
	DefaultMaxCached = 1024
	// DefaultReviewsPerSecond and DefaultReviewBurst bound the reviews of
	// what is not cached.
	DefaultReviewsPerSecond = 5
	DefaultReviewBurst      = 20
)

// reviewTimeout bounds one review.
const reviewTimeout = 10 * time.Second

// verdict is what a review decided: the HTTP status to answer
// (http.StatusOK admits) and what the reviewer learnt on the way.
type verdict[T any] struct {
	status  int
	found   T
	expires time.Time
}

// Caching tunes the verdicts a reviewer keeps.
type Caching struct {
	// AdmitTTL is how long an admission holds (DefaultAdmitTTL when
	// zero), RefuseTTL a refusal (DefaultRefuseTTL when zero).
	AdmitTTL  time.Duration
	RefuseTTL time.Duration
	// MaxCached bounds the verdicts kept (DefaultMaxCached when zero).
	MaxCached int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// verdicts keeps the verdicts of reviews under the SHA-256 of what was
// reviewed (never the thing itself: it may be a token), as its Caching
// says. It runs one review at a time per key, and rate-limits the reviews
// of keys it does not keep, so that a flood of made-up requests costs a
// few reviews a second.
type verdicts[T any] struct {
	Caching

	once    sync.Once
	mu      sync.Mutex
	kept    map[[sha256.Size]byte]verdict[T]
	limiter flowcontrol.RateLimiter
	flight  singleflight.Group
}

func (v *verdicts[T]) init() {
	v.once.Do(func() {
		v.kept = map[[sha256.Size]byte]verdict[T]{}
		v.limiter = flowcontrol.NewTokenBucketRateLimiter(DefaultReviewsPerSecond, DefaultReviewBurst)
	})
}

func (v *verdicts[T]) clock() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// decide returns the verdict kept for subject, or the one review decides:
// http.StatusTooManyRequests when too many reviews ran lately. A verdict
// of http.StatusServiceUnavailable (the API server could not decide) is
// not kept.
func (v *verdicts[T]) decide(subject []byte, review func() verdict[T]) verdict[T] {
	v.init()
	key := sha256.Sum256(subject)
	if found, ok := v.cached(key); ok {
		return found
	}
	out, _, _ := v.flight.Do(string(key[:]), func() (any, error) {
		if found, ok := v.cached(key); ok {
			return found, nil
		}
		if !v.limiter.TryAccept() {
			return verdict[T]{status: http.StatusTooManyRequests}, nil
		}
		decided := review()
		if decided.status != http.StatusServiceUnavailable {
			v.keep(key, decided)
		}
		return decided, nil
	})
	return out.(verdict[T])
}

// cached returns the verdict kept under key, if it holds.
func (v *verdicts[T]) cached(key [sha256.Size]byte) (verdict[T], bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	found, ok := v.kept[key]
	if !ok || !v.clock().Before(found.expires) {
		return verdict[T]{}, false
	}
	return found, true
}

// keep keeps decided under key, making room when the verdicts kept are at
// their bound.
func (v *verdicts[T]) keep(key [sha256.Size]byte, decided verdict[T]) {
	size := v.MaxCached
	if size <= 0 {
		size = DefaultMaxCached
	}
	now := v.clock()
	decided.expires = now.Add(v.ttl(decided.status))
	v.mu.Lock()
	defer v.mu.Unlock()
	v.makeRoom(now, size)
	v.kept[key] = decided
}

// ttl is how long a verdict of status is kept.
func (v *verdicts[T]) ttl(status int) time.Duration {
	switch {
	case status == http.StatusOK && v.AdmitTTL > 0:
		return v.AdmitTTL
	case status == http.StatusOK:
		return DefaultAdmitTTL
	case v.RefuseTTL > 0:
		return v.RefuseTTL
	}
	return DefaultRefuseTTL
}

// makeRoom drops verdicts, expired ones first, until there are fewer than
// size; v.mu is held.
func (v *verdicts[T]) makeRoom(now time.Time, size int) {
	if len(v.kept) < size {
		return
	}
	for k, found := range v.kept {
		if !now.Before(found.expires) {
			delete(v.kept, k)
		}
	}
	for k := range v.kept {
		if len(v.kept) < size {
			return
		}
		delete(v.kept, k)
	}
}
