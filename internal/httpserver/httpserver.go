// Package httpserver runs an HTTP server for as long as a context lasts,
// then shuts it down gracefully: the one lifecycle of the artifact
// storage, the Receivers' webhooks, the event endpoint and the tags server.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve serves srv on ln until ctx is done, then shuts srv down, waiting up
// to grace for the requests in flight. It closes ln. A nil return means a
// clean shutdown.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutting down the server on %s: %w", ln.Addr(), err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ListenAndServe listens on addr, then serves srv there as Serve does.
func ListenAndServe(ctx context.Context, srv *http.Server, addr string, grace time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, srv, ln, grace)
}

// Runnable serves Server on Addr while a controller-runtime manager runs,
// on every replica (it needs no leader).
type Runnable struct {
	Server *http.Server
	Addr   string
	// Grace bounds the wait for requests in flight at shutdown.
	Grace time.Duration
}

// NeedLeaderElection is false: every replica serves.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Start serves until ctx is done.
func (r *Runnable) Start(ctx context.Context) error {
	return ListenAndServe(ctx, r.Server, r.Addr, r.Grace)
}
