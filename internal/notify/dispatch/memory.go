package dispatch

import (
	"container/list"
	"time"
)

// boundedSet remembers keys with the time they were added, oldest first,
// up to max keys: adding one more forgets the oldest. Adding a key again
// makes it the newest. It is not safe for concurrent use.
type boundedSet[K comparable] struct {
	max   int
	order *list.List // of *entry[K], oldest first
	index map[K]*list.Element
}

type entry[K comparable] struct {
	key K
	at  time.Time
}

func newBoundedSet[K comparable](max int) *boundedSet[K] {
	return &boundedSet[K]{max: max, order: list.New(), index: map[K]*list.Element{}}
}

func (s *boundedSet[K]) has(k K) bool {
	_, ok := s.index[k]
	return ok
}

// add remembers k as added at, the newest key.
func (s *boundedSet[K]) add(k K, at time.Time) {
	if el, ok := s.index[k]; ok {
		el.Value.(*entry[K]).at = at
		s.order.MoveToBack(el)
		return
	}
	if s.order.Len() >= s.max {
		s.remove(s.order.Front().Value.(*entry[K]).key)
	}
	s.index[k] = s.order.PushBack(&entry[K]{key: k, at: at})
}

func (s *boundedSet[K]) remove(k K) {
	if el, ok := s.index[k]; ok {
		s.order.Remove(el)
		delete(s.index, k)
	}
}

// forgetUpTo forgets the keys added at t or before. Keys are added in the
// order of the clock, so they are at the front.
func (s *boundedSet[K]) forgetUpTo(t time.Time) {
	for el := s.order.Front(); el != nil && !el.Value.(*entry[K]).at.After(t); el = s.order.Front() {
		s.remove(el.Value.(*entry[K]).key)
	}
}

// removeIf forgets the keys for which drop is true.
func (s *boundedSet[K]) removeIf(drop func(K) bool) {
	for k := range s.index {
		if drop(k) {
			s.remove(k)
		}
	}
}

func (s *boundedSet[K]) len() int { return s.order.Len() }
