package reconcile

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/parallel"
)

// The delays of AnnounceIfSlow in its tests: a short step is given a delay
// it cannot reach, and a long step waits until it is announced, so that no
// test depends on how fast the machine is.
const (
	never     = time.Hour
	immediate = time.Nanosecond
)

// waitLimit bounds how long a long step waits for its announcement, so that
// a broken AnnounceIfSlow fails the test instead of hanging it.
const waitLimit = time.Minute

func TestAnnounceIfSlow(t *testing.T) {
	tests := []struct {
		name          string
		long          bool
		announceErr   error
		wantAnnounced int32
	}{
		{name: "a short step is not announced", long: false, wantAnnounced: 0},
		{name: "a long step is announced once while it runs", long: true, wantAnnounced: 1},
		{name: "a failed announcement does not fail the step", long: true, announceErr: errors.New("conflict"), wantAnnounced: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newSlowStep(tt.long, tt.announceErr)
			v, err := AnnounceIfSlow(context.Background(), s.delay(), s.announce, func() (string, error) {
				s.wait()
				return "commit", errors.New("clone failed")
			})
			g.Expect(v).To(Equal("commit"))
			g.Expect(err).To(MatchError("clone failed"))
			g.Expect(s.announced.Load()).To(Equal(tt.wantAnnounced))
			g.Expect(s.announcedWhileRunning.Load()).To(Equal(tt.wantAnnounced))
		})
	}

	t.Run("without announce the step just runs", func(t *testing.T) {
		g := NewWithT(t)
		v, err := AnnounceIfSlow(context.Background(), immediate, nil, func() (int, error) {
			return 7, nil
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v).To(Equal(7))
	})
}

func TestAnnounceIfSlowRecoversAPanic(t *testing.T) {
	for _, tt := range []struct {
		name         string
		long         bool
		withAnnounce bool
	}{
		{name: "in a short step", withAnnounce: true},
		{name: "in a long step, after the announcement", long: true, withAnnounce: true},
		{name: "without announce", withAnnounce: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newSlowStep(tt.long, nil)
			announce := s.announce
			if !tt.withAnnounce {
				announce = nil
			}
			v, err := AnnounceIfSlow(context.Background(), s.delay(), announce, func() (*int, error) {
				s.wait()
				var m map[string]int
				m["pack"] = 1
				return new(int), nil
			})
			g.Expect(v).To(BeNil())
			g.Expect(err).To(MatchError(ContainSubstring("panicked: assignment to entry in nil map")))
			var p *parallel.PanicError
			g.Expect(errors.As(err, &p)).To(BeTrue())
			g.Expect(string(p.Stack)).To(ContainSubstring("prepare_test.go"))
		})
	}
}

// slowStep stands for the work of AnnounceIfSlow and its announcement. A
// long step waits until it is announced; a short one returns at once and
// is given a delay it never reaches.
type slowStep struct {
	long                  bool
	announceErr           error
	announcedCh           chan struct{}
	running               atomic.Bool
	announced             atomic.Int32
	announcedWhileRunning atomic.Int32
}

func newSlowStep(long bool, announceErr error) *slowStep {
	s := &slowStep{long: long, announceErr: announceErr, announcedCh: make(chan struct{})}
	s.running.Store(true)
	return s
}

func (s *slowStep) delay() time.Duration {
	if s.long {
		return immediate
	}
	return never
}

func (s *slowStep) announce(context.Context) error {
	if s.running.Load() {
		s.announcedWhileRunning.Add(1)
	}
	if s.announced.Add(1) == 1 {
		close(s.announcedCh)
	}
	return s.announceErr
}

// wait is what the work does before it returns.
func (s *slowStep) wait() {
	defer s.running.Store(false)
	if !s.long {
		return
	}
	select {
	case <-s.announcedCh:
	case <-time.After(waitLimit):
	}
}
