package devenv

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestSignalContext: Ctrl-C, SIGTERM and a closed terminal (SIGHUP) end a
// dev run's context.
func TestSignalContext(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			g := NewWithT(t)
			ctx, stop := SignalContext(context.Background())
			defer stop()
			g.Expect(syscall.Kill(os.Getpid(), sig)).To(Succeed())
			g.Eventually(ctx.Done(), 30*time.Second).Should(BeClosed())
		})
	}
}
