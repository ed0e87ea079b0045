package git

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/net/proxy"
)

// go-git gives its transports neither the caller's context nor a way to
// count what they read: a server that accepts the connection and stays
// silent would block a clone forever, and one that sends an endless pack or
// reference advertisement would fill the controller's memory. So every
// connection of a Clone over http, https or ssh is dialled by this package,
// reached through go-git's proxy settings: the endpoint's proxy URL is
// "windlass-ctx://<id>", and the transport code for that scheme (sshdial.go
// and httpdial.go) looks up operation <id>. Its connections are closed when
// the Clone's context is done or the Clone ends, and every byte read from
// them counts against the Clone's transfer limit. A proxy configured by the
// user is still used.
const ctxDialScheme = "windlass-ctx"

var (
	operations   sync.Map // operation id -> *operation
	operationSeq atomic.Uint64
)

// operation is what one Clone shares with the transports it drives.
type operation struct {
	// ctx is done when the Clone's context is, or when the Clone ends.
	ctx    context.Context
	cancel context.CancelFunc
	// transfer counts the bytes read from the connections.
	transfer *byteBudget
	// userProxy is the proxy the user configured, or nil.
	userProxy *ProxyOptions
	// key is the registry key; proxyURL routes go-git to the operation.
	key, proxyURL string

	sshOnce    sync.Once
	sshForward proxy.ContextDialer
	sshErr     error

	httpOnce sync.Once
	http     transport.Transport
}

// registerOperation makes ctx govern the connections of one Clone and
// transfer count what they read. Release it with release.
func registerOperation(ctx context.Context, transfer *byteBudget, userProxy *ProxyOptions) *operation {
	opCtx, cancel := context.WithCancel(ctx)
	id := strconv.FormatUint(operationSeq.Add(1), 10)
	op := &operation{
		ctx:       opCtx,
		cancel:    cancel,
		transfer:  transfer,
		userProxy: userProxy,
		key:       id,
		proxyURL:  ctxDialScheme + "://" + id,
	}
	operations.Store(id, op)
	return op
}

// lookupOperation returns the registered operation a proxy URL routes to.
func lookupOperation(u *url.URL) (*operation, bool) {
	if u == nil || u.Scheme != ctxDialScheme {
		return nil, false
	}
	op, ok := operations.Load(u.Host)
	if !ok {
		return nil, false
	}
	return op.(*operation), true
}

// release unregisters the operation and closes its connections.
func (op *operation) release() {
	operations.Delete(op.key)
	op.cancel()
}

// dial dials addr through forward and ties the connection to the
// operation: it is closed as soon as either context is done, which unblocks
// a stalled handshake or transfer, and what is read from it is counted.
func (op *operation) dial(ctx context.Context, forward proxy.ContextDialer, network, addr string) (net.Conn, error) {
	dialCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopDial := context.AfterFunc(op.ctx, cancel)
	defer stopDial()
	conn, err := forward.DialContext(dialCtx, network, addr)
	if err != nil {
		if ctxErr := op.ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	stop := context.AfterFunc(op.ctx, func() { _ = conn.Close() })
	return &opConn{Conn: conn, budget: op.transfer, stop: stop}, nil
}

// opConn is a connection of an operation: closed when the operation ends,
// its reads counted against the transfer limit.
type opConn struct {
	net.Conn
	budget *byteBudget
	stop   func() bool
}

// Read reads from the connection and fails with a [*TooLargeError] once
// the operation has read more than its limit.
func (c *opConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if tooLarge := c.budget.take(int64(n)); tooLarge != nil {
		return n, tooLarge
	}
	return n, err
}

// Close stops watching the context and closes the connection.
func (c *opConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
