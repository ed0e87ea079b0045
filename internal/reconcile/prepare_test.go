package reconcile

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestAnnounceIfSlow(t *testing.T) {
	tests := []struct {
		name          string
		work          time.Duration
		announceErr   error
		wantAnnounced int32
	}{
		{name: "a short step is not announced", work: 0, wantAnnounced: 0},
		{name: "a long step is announced once while it runs", work: 200 * time.Millisecond, wantAnnounced: 1},
		{name: "a failed announcement does not fail the step", work: 200 * time.Millisecond, announceErr: errors.New("conflict"), wantAnnounced: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var announced atomic.Int32
			var workDone atomic.Bool
			announce := func(context.Context) error {
				g.Expect(workDone.Load()).To(BeFalse(), "announced while the step runs")
				announced.Add(1)
				return tt.announceErr
			}
			v, err := AnnounceIfSlow(context.Background(), 20*time.Millisecond, announce, func() (string, error) {
				time.Sleep(tt.work)
				workDone.Store(true)
				return "commit", errors.New("clone failed")
			})
			g.Expect(v).To(Equal("commit"))
			g.Expect(err).To(MatchError("clone failed"))
			g.Expect(announced.Load()).To(Equal(tt.wantAnnounced))
		})
	}

	t.Run("without announce the step just runs", func(t *testing.T) {
		g := NewWithT(t)
		v, err := AnnounceIfSlow(context.Background(), time.Millisecond, nil, func() (int, error) {
			time.Sleep(10 * time.Millisecond)
			return 7, nil
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v).To(Equal(7))
	})
}
