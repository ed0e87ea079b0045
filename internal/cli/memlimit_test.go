package cli

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/helm/sandbox"
	"github.com/windlass-dev/windlass/internal/kinds"
)

// TestApplyMemoryLimit: the Go runtime's soft limit is the container's
// less the chart renders' share (when the helm controller runs) and a
// tenth, at least a quarter of it; GOMEMLIMIT, when set, wins, and a limit
// that is not a number changes nothing.
func TestApplyMemoryLimit(t *testing.T) {
	renders := sandbox.Limits{Memory: 256 << 20, Concurrency: 2}
	for _, tc := range []struct {
		name         string
		limit, gomem string
		controllers  []string
		want         int64
	}{
		{"all controllers in 2Gi", "2147483648", "", []string{kinds.SourceController, kinds.HelmController}, 2048<<20 - 512<<20 - 2048<<20/10},
		{"no helm controller", "2147483648", "", []string{kinds.SourceController}, 2048<<20 - 2048<<20/10},
		{"renders take most", "805306368", "", []string{kinds.HelmController}, 768 << 20 / 4},
		{"GOMEMLIMIT wins", "2147483648", "1GiB", []string{kinds.HelmController}, math.MaxInt64},
		{"not a number", "2Gi", "", []string{kinds.HelmController}, math.MaxInt64},
		{"unset", "", "", []string{kinds.HelmController}, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Setenv(MemoryLimitEnv, tc.limit)
			t.Setenv("GOMEMLIMIT", tc.gomem)
			previous := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(previous)
			applyMemoryLimit(logr.Discard(), tc.controllers, renders)
			g.Expect(debug.SetMemoryLimit(-1)).To(Equal(tc.want))
		})
	}
}
