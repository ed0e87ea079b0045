package manager

import (
	"fmt"
	"net"

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

// checkUIAddr refuses a UI address that is not on loopback: the UI has no
// sign-in yet, so it serves only who can reach the host itself.
func checkUIAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--ui-addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--ui-addr %q: the UI serves loopback addresses only (127.0.0.1, ::1, localhost) until it has sign-in", addr)
	}
	return nil
}
