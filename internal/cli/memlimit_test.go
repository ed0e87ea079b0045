package cli

import (
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/kinds"
)

// TestApplyMemoryLimit: the Go runtime's soft limit is the container's
// less the child processes' share (when the helm or kustomize controller
// runs) and a tenth, at least a quarter of it; GOMEMLIMIT, when set, wins, and a limit
// that is not a number changes nothing.
func TestApplyMemoryLimit(t *testing.T) {
	const children = 512 << 20
	for _, tc := range []struct {
		name         string
		limit, gomem string
		controllers  []string
		want         int64
	}{
		{"all controllers in 2Gi", "2147483648", "", []string{kinds.SourceController, kinds.HelmController}, 2048<<20 - 512<<20 - 2048<<20/10},
		{"kustomize controller", "2147483648", "", []string{kinds.KustomizeController}, 2048<<20 - 512<<20 - 2048<<20/10},
		{"neither helm nor kustomize controller", "2147483648", "", []string{kinds.SourceController}, 2048<<20 - 2048<<20/10},
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
			applyMemoryLimit(logr.Discard(), tc.controllers, children)
			g.Expect(debug.SetMemoryLimit(-1)).To(Equal(tc.want))
		})
	}
}

// TestApplyGCPercent: the controller collects at GOGC=50 unless $GOGC says
// otherwise (the runtime has read it at start); an empty $GOGC is unset.
func TestApplyGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gogc  string
		set   bool
		start int
		want  int
	}{
		{"unset", "", false, 100, controllerGCPercent},
		{"set", "200", true, 200, 200},
		{"off", "off", true, -1, -1},
		{"empty", "", true, 100, controllerGCPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Setenv("GOGC", tc.gogc) // restored after the test, whatever follows
			if !tc.set {
				g.Expect(os.Unsetenv("GOGC")).To(Succeed())
			}
			previous := debug.SetGCPercent(tc.start)
			defer debug.SetGCPercent(previous)
			applyGCPercent(logr.Discard())
			g.Expect(debug.SetGCPercent(previous)).To(Equal(tc.want))
		})
	}
}
