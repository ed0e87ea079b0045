package git

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/net/proxy"
)

// go-git dials SSH servers without the caller's context: a server that
// accepts the TCP connection and then stays silent would block a clone
// forever, whatever the reconcile timeout. To make SSH honour the context,
// every SSH operation goes through a dialer of our own, reached through
// go-git's SSH proxy support: the endpoint's proxy URL is
// "windlass-ctx://<id>", and the dialer registered for that scheme looks up
// the context of operation <id> and closes the connection when the context
// is done. A proxy configured by the user (SOCKS5) is still used, as the
// forward dialer.
//
// The scheme is registered once, in init, in golang.org/x/net/proxy's
// process-wide registry; that registry is not safe for concurrent writes,
// and init runs before any clone. Nothing else global is changed.
const ctxDialScheme = "windlass-ctx"

func init() {
	proxy.RegisterDialerType(ctxDialScheme, lookupCtxDialer)
}

var (
	ctxDialers   sync.Map // operation id -> *ctxDialer
	ctxDialerSeq atomic.Uint64
)

// ctxDialer dials through forward and ties each connection to ctx.
type ctxDialer struct {
	ctx     context.Context
	forward proxy.ContextDialer
}

// lookupCtxDialer is the proxy.FromURL hook for ctxDialScheme.
func lookupCtxDialer(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
	d, ok := ctxDialers.Load(u.Host)
	if !ok {
		return nil, errors.New("ssh: dial context expired")
	}
	return d.(*ctxDialer), nil
}

// registerCtxDialer makes ctx govern the SSH connections of one operation
// and returns the proxy options that route go-git to it, plus a function that
// releases the registration. userProxy, if set, is a SOCKS5 proxy to dial
// through.
func registerCtxDialer(ctx context.Context, userProxy *url.URL) (string, func(), error) {
	var forward proxy.Dialer = proxy.Direct
	if userProxy != nil {
		var err error
		if forward, err = proxy.FromURL(userProxy, proxy.Direct); err != nil {
			return "", nil, err
		}
	}
	cd, ok := forward.(proxy.ContextDialer)
	if !ok {
		return "", nil, errors.New("ssh: proxy does not support dialing with a context")
	}
	id := strconv.FormatUint(ctxDialerSeq.Add(1), 10)
	ctxDialers.Store(id, &ctxDialer{ctx: ctx, forward: cd})
	return ctxDialScheme + "://" + id, func() { ctxDialers.Delete(id) }, nil
}

// Dial implements proxy.Dialer.
func (d *ctxDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext implements proxy.ContextDialer. The connection is closed as
// soon as either context is done, which unblocks a stalled handshake or
// transfer.
func (d *ctxDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	dialCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopDial := context.AfterFunc(d.ctx, cancel)
	defer stopDial()
	conn, err := d.forward.DialContext(dialCtx, network, addr)
	if err != nil {
		if ctxErr := d.ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	stop := context.AfterFunc(d.ctx, func() { _ = conn.Close() })
	return &ctxConn{Conn: conn, stop: stop}, nil
}

// ctxConn is a connection closed when its operation's context is done.
type ctxConn struct {
	net.Conn
	stop func() bool
}

// Close stops watching the context and closes the connection.
func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
