package manager

import (
	"context"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/internal/httpserver"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/ui"
)

// startUI serves the web UI on opts.UIAddr, when set, from the shared
// informer cache, with live updates from its informers. Its server has no
// write timeout: the live updates' stream stays open.
func (m *Manager) startUI(ctx context.Context, opts Options) error {
	if opts.UIAddr == "" {
		return nil
	}
	changes, err := ui.NewChanges(ctx, m.GetCache(), kinds.All)
	if err != nil {
		return err
	}
	server := &ui.Server{Reader: m.GetCache(), Kinds: kinds.All, Log: ctrl.Log.WithName("ui"), Changes: changes}
	if opts.UIActions {
		server.Actions = m.GetClient()
	}
	return m.Add(&httpserver.Runnable{Addr: opts.UIAddr, Grace: 5 * time.Second, Server: &http.Server{Handler: server.Handler(),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}})
}

// checkUIAddr refuses a UI address that is not on loopback.
func checkUIAddr(addr string) error {
	if addr == "" {
		return nil
	}
	if err := ui.CheckLoopback(addr); err != nil {
		return fmt.Errorf("--ui-addr: %w", err)
	}
	return nil
}
