package chart

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSafely(t *testing.T) {
	errFailed := errors.New("failed")
	tests := []struct {
		name    string
		fn      func() error
		wantErr string
		wantIs  error
	}{
		{name: "success", fn: func() error { return nil }},
		{name: "error passes through", fn: func() error { return errFailed }, wantErr: "failed", wantIs: errFailed},
		{name: "panic with a string", fn: func() error { panic("boom") }, wantErr: "recovered from a panic: boom"},
		{name: "panic with an error", fn: func() error { panic(errFailed) }, wantErr: "recovered from a panic: failed"},
		{name: "nil map write", fn: func() error {
			var m map[string]int
			m["x"] = 1
			return nil
		}, wantErr: "assignment to entry in nil map"},
		{name: "long panic text is cut", fn: func() error { panic(strings.Repeat("x", 10000)) }, wantErr: strings.Repeat("x", maxPanicText) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Safely(tt.fn)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(len(err.Error())).To(BeNumerically("<", 600))
			if tt.wantIs != nil {
				g.Expect(err).To(MatchError(tt.wantIs))
			}
		})
	}
}
