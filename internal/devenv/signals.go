package devenv

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext returns a context that ends on Ctrl-C (SIGINT), SIGTERM or
// SIGHUP (its terminal closed), the signals that stop a dev run. It also takes SIGPIPE, so that a write
// to a closed standard output (`windlass dev | tee log` after Ctrl-C ended
// tee) fails instead of killing windlass before it stops the control
// plane; the printer ignores write errors.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	// Notify, not Ignore: an ignored signal stays ignored in the children.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}
