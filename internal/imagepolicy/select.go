package imagepolicy

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// candidate is a tag that passed the filter, with its parsed value.
type candidate struct {
	tag     string
	value   string          // the extracted value (alphabetical)
	version *semver.Version // semver
	number  float64         // numerical
}

// candidate filters tag and parses its value for the policy.
func (p *Policy) candidate(tag string) (candidate, bool) {
	c := candidate{tag: tag, value: tag}
	if p.filter != nil {
		match := p.filter.FindStringSubmatchIndex(tag)
		if match == nil {
			return candidate{}, false
		}
		if p.spec.FilterExtract != "" {
			c.value = string(p.filter.ExpandString(nil, p.spec.FilterExtract, tag, match))
		}
	}
	switch p.kind {
	case semverKind:
		v, err := semver.NewVersion(c.value)
		if err != nil || !p.constraint.Check(v) {
			return candidate{}, false
		}
		c.version = v
	case numericalKind:
		n, err := strconv.ParseFloat(c.value, 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return candidate{}, false
		}
		c.number = n
	case alphabeticalKind:
		if c.value == "" {
			return candidate{}, false
		}
	}
	return c, true
}

// compare is positive when a ranks above b, negative when below, and zero
// only for the same tag: equal values are told apart by the greater tag.
func (p *Policy) compare(a, b candidate) int {
	var c int
	switch p.kind {
	case semverKind:
		c = a.version.Compare(b.version)
	case alphabeticalKind:
		c = strings.Compare(a.value, b.value)
	case numericalKind:
		c = cmp.Compare(a.number, b.number)
	}
	if p.desc {
		c = -c
	}
	if c == 0 {
		c = strings.Compare(a.tag, b.tag)
	}
	return c
}

// Candidate reports whether tag passes the filter and its value parses for
// the policy: a semantic version within the range, a finite number, or a
// non-empty string.
func (p *Policy) Candidate(tag string) bool {
	_, ok := p.candidate(tag)
	return ok
}

// Better reports whether tag a ranks above tag b. A tag that is no
// candidate ranks below every candidate, so Better is false when a is no
// candidate.
func (p *Policy) Better(a, b string) bool {
	ca, ok := p.candidate(a)
	if !ok {
		return false
	}
	cb, ok := p.candidate(b)
	return !ok || p.compare(ca, cb) > 0
}

// Selector elects the latest of the tags offered to it one by one, keeping
// only the best so far. It is not safe for concurrent use.
type Selector struct {
	policy     *Policy
	best       candidate
	seen       int
	considered int
}

// NewSelector starts an election.
func (p *Policy) NewSelector() *Selector {
	return &Selector{policy: p}
}

// Offer considers tag.
func (s *Selector) Offer(tag string) {
	s.seen++
	c, ok := s.policy.candidate(tag)
	if !ok {
		return
	}
	s.considered++
	if s.considered == 1 || s.policy.compare(c, s.best) > 0 {
		s.best = c
	}
}

// Latest is the elected tag, and false when no candidate was offered.
func (s *Selector) Latest() (tag string, ok bool) {
	return s.best.tag, s.considered > 0
}

// Considered counts the offered tags that were candidates (a tag offered
// twice counts twice).
func (s *Selector) Considered() int { return s.considered }

// Seen counts the offered tags.
func (s *Selector) Seen() int { return s.seen }

// ErrNoCandidate is what every *NoCandidateError is (errors.Is).
var ErrNoCandidate = errors.New("no tag matches the policy")

// NoCandidateError says that none of the tags is a candidate of a policy.
type NoCandidateError struct {
	// Seen is how many tags there were.
	Seen int
	// Policy describes the policy, its range, pattern and extract quoted.
	Policy string
}

// Error reads e.g. `no tag of 1000 matches semver ">=9.0.0"`.
func (e *NoCandidateError) Error() string {
	return fmt.Sprintf("no tag of %d matches %s", e.Seen, e.Policy)
}

// Is makes errors.Is(err, ErrNoCandidate) hold.
func (e *NoCandidateError) Is(target error) bool { return target == ErrNoCandidate }

// Latest elects the latest of tags, or returns a *NoCandidateError when
// none is a candidate.
func (p *Policy) Latest(tags iter.Seq[string]) (string, error) {
	s := p.NewSelector()
	for tag := range tags {
		s.Offer(tag)
	}
	if tag, ok := s.Latest(); ok {
		return tag, nil
	}
	return "", &NoCandidateError{Seen: s.Seen(), Policy: p.describe(strconv.Quote)}
}

// Top returns the n best candidates of tags, best (latest) first, each tag
// once. It keeps at most n candidates, in a heap whose root is the worst
// kept, so memory is O(n) whatever the number of tags.
func (p *Policy) Top(tags iter.Seq[string], n int) []string {
	if n <= 0 {
		return nil
	}
	h := &worstFirst{policy: p}
	kept := make(map[string]bool, min(n, 1024))
	for tag := range tags {
		if kept[tag] {
			continue
		}
		c, ok := p.candidate(tag)
		switch {
		case !ok:
			continue
		case h.Len() < n:
			heap.Push(h, c)
		case p.compare(c, h.items[0]) > 0:
			delete(kept, h.items[0].tag)
			h.items[0] = c
			heap.Fix(h, 0)
		default:
			continue
		}
		kept[tag] = true
	}
	best := make([]string, h.Len())
	for i := len(best) - 1; i >= 0; i-- {
		best[i] = heap.Pop(h).(candidate).tag
	}
	return best
}

// worstFirst is a heap.Interface of candidates whose root ranks lowest.
type worstFirst struct {
	policy *Policy
	items  []candidate
}

func (h *worstFirst) Len() int           { return len(h.items) }
func (h *worstFirst) Less(i, j int) bool { return h.policy.compare(h.items[i], h.items[j]) < 0 }
func (h *worstFirst) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *worstFirst) Push(x any)         { h.items = append(h.items, x.(candidate)) }
func (h *worstFirst) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}
