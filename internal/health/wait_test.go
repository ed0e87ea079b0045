package health

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestWait(t *testing.T) {
	ns := env.CreateNamespace(t)
	zero := createDeployment(t, ns, "zero", 0)
	stuck := createDeployment(t, ns, "stuck", 1)
	broken := createWidget(t, widgetV1, ns, "broken", stalled("the widget broke"))
	missing := deploymentRef(ns, "missing")

	tests := []struct {
		name     string
		refs     []ObjectRef
		opts     WaitOptions
		wantErr  error    // nil: the wait succeeds
		wantMsgs []string // in the error
		within   time.Duration
	}{
		{name: "no objects", refs: nil, within: time.Second},
		{name: "deployment scaled to zero", refs: []ObjectRef{zero}, opts: WaitOptions{Timeout: 30 * time.Second}, within: 30 * time.Second},
		{
			name:    "deployment that cannot run times out",
			refs:    []ObjectRef{zero, stuck},
			opts:    WaitOptions{Timeout: 2 * time.Second, FailFast: true},
			wantErr: ErrTimeout,
			wantMsgs: []string{
				"health check timed out after 2s: ",
				"Deployment/" + ns + "/stuck status: 'InProgress': Available: 0/1",
			},
			within: 5 * time.Second,
		},
		{
			name:     "stalled object fails fast",
			refs:     []ObjectRef{stuck, broken},
			opts:     WaitOptions{Timeout: time.Minute, FailFast: true},
			wantErr:  ErrFailed,
			wantMsgs: []string{"health check failed: Widget/" + ns + "/broken status: 'Failed': the widget broke"},
			within:   5 * time.Second,
		},
		{
			name:    "stalled object without fail-fast waits for the timeout",
			refs:    []ObjectRef{broken, stuck},
			opts:    WaitOptions{Timeout: time.Second},
			wantErr: ErrTimeout,
			wantMsgs: []string{
				"Widget/" + ns + "/broken status: 'Failed': the widget broke; ",
				"Deployment/" + ns + "/stuck status: 'InProgress'",
			},
			within: 5 * time.Second,
		},
		{
			name:     "missing object times out",
			refs:     []ObjectRef{missing},
			opts:     WaitOptions{Timeout: time.Second, FailFast: true},
			wantErr:  ErrTimeout,
			wantMsgs: []string{"Deployment/" + ns + "/missing status: 'NotFound': object not found"},
			within:   5 * time.Second,
		},
		{
			name:     "invalid expression fails before any check",
			refs:     []ObjectRef{zero},
			opts:     WaitOptions{Exprs: []Expr{{APIVersion: widgetV1, Current: "status.phase =="}}},
			wantMsgs: []string{"healthCheckExprs[0].current: invalid CEL expression"},
			within:   time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			if tt.opts.PollInterval == 0 {
				tt.opts.PollInterval = 100 * time.Millisecond
			}
			start := time.Now()
			err := newChecker().Wait(context.Background(), tt.refs, tt.opts)
			g.Expect(time.Since(start)).To(BeNumerically("<", tt.within))
			if tt.wantErr == nil && tt.wantMsgs == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), err.Error())
				var we *WaitError
				g.Expect(errors.As(err, &we)).To(BeTrue())
			} else {
				g.Expect(IsInvalidExpr(err)).To(BeTrue(), err.Error())
			}
			for _, msg := range tt.wantMsgs {
				g.Expect(err.Error()).To(ContainSubstring(msg))
			}
		})
	}
}

// TestWaitForObjectCreatedLater waits for an object that does not exist
// yet and becomes ready during the wait.
func TestWaitForObjectCreatedLater(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	ref := ObjectRef{APIVersion: widgetV1, Kind: widgetKind, Namespace: ns, Name: "later"}
	created := make(chan error, 1)
	time.AfterFunc(300*time.Millisecond, func() {
		u := newWidget(widgetV1, ns, "later")
		err := env.Client.Create(context.Background(), u)
		if err == nil {
			u.Object["status"] = map[string]any{"phase": "Ready"}
			err = env.Client.Status().Update(context.Background(), u)
		}
		created <- err
	})
	err := newChecker().Wait(context.Background(), []ObjectRef{ref}, WaitOptions{
		Timeout: 20 * time.Second, PollInterval: 100 * time.Millisecond, FailFast: true,
		Exprs: []Expr{{APIVersion: widgetV1, Kind: widgetKind, Current: "status.phase == 'Ready'"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(<-created).To(Succeed())
}

// TestWaitCanceled cancels a wait that would last a minute, as a new
// revision does (security.md row 41).
func TestWaitCanceled(t *testing.T) {
	ns := env.CreateNamespace(t)
	stuck := createDeployment(t, ns, "stuck", 1)
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
	}{
		{name: "canceled during the wait", wantErr: context.Canceled, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}},
		{name: "canceled before the wait", wantErr: context.Canceled, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		{name: "canceled with a cause", wantErr: errNewRevision, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(300*time.Millisecond, func() { cancel(errNewRevision) })
			return ctx, func() { cancel(nil) }
		}},
		{name: "caller's deadline", wantErr: context.DeadlineExceeded, ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			// A long poll interval: the wait must not sleep through the
			// cancellation.
			err := newChecker().Wait(ctx, []ObjectRef{stuck}, WaitOptions{Timeout: time.Minute, PollInterval: 30 * time.Second})
			g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(err).To(MatchError(ContainSubstring("health check canceled")))
			g.Expect(errors.Is(err, ErrTimeout)).To(BeFalse())
		})
	}
}

var errNewRevision = errors.New("a new revision arrived")

func TestWaitErrorMessage(t *testing.T) {
	objects := []ObjectStatus{
		{Ref: deploymentRef("ns", "app"), Status: InProgress, Message: "Available: 0/1"},
		{Ref: ObjectRef{APIVersion: widgetV1, Kind: widgetKind, Namespace: "ns", Name: "w"}, Status: NotFound, Message: "object not found"},
	}
	readErr := errors.New("connection refused")
	tests := []struct {
		name string
		err  *WaitError
		want string
		is   []error
	}{
		{
			name: "timeout",
			err:  &WaitError{Err: ErrTimeout, Timeout: 90 * time.Second, Objects: objects},
			want: "health check timed out after 1m30s: Deployment/ns/app status: 'InProgress': Available: 0/1; Widget/ns/w status: 'NotFound': object not found",
			is:   []error{ErrTimeout},
		},
		{
			name: "failed",
			err:  &WaitError{Err: ErrFailed, Objects: objects[:1]},
			want: "health check failed: Deployment/ns/app status: 'InProgress': Available: 0/1",
			is:   []error{ErrFailed},
		},
		{
			name: "timeout after read errors",
			err:  &WaitError{Err: ErrTimeout, Timeout: time.Second, Objects: objects[1:], LastErr: readErr},
			want: "health check timed out after 1s: Widget/ns/w status: 'NotFound': object not found (last check: connection refused)",
			is:   []error{ErrTimeout, readErr},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.err.Error()).To(Equal(tt.want))
			for _, target := range tt.is {
				g.Expect(errors.Is(tt.err, target)).To(BeTrue())
			}
		})
	}
}
