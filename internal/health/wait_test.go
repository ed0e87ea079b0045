package health

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

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
