package manager

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/ui"
)

// startUI serves the web UI on opts.UIAddr, when set, from the shared
// informer cache.
func (m *Manager) startUI(opts Options) error {
	if opts.UIAddr == "" {
		return nil
	}
	server := &ui.Server{Reader: m.GetCache(), Kinds: kinds.All, Log: ctrl.Log.WithName("ui")}
	return m.Add(apiServer(opts.UIAddr, server.Handler()))
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
