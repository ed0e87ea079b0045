package git

import (
	"context"
	"errors"
	"net"
	"net/url"

	"golang.org/x/net/proxy"
)

// go-git's SSH transport dials through golang.org/x/net/proxy when the
// endpoint has a proxy URL. The ctxDialScheme is registered once, in init,
// in that package's process-wide registry (which is not safe for concurrent
// writes; init runs before any clone), so that go-git dials every SSH
// connection of a Clone through its operation (see operation.go).

func init() {
	proxy.RegisterDialerType(ctxDialScheme, lookupSSHDialer)
}

// lookupSSHDialer is the proxy.FromURL hook for ctxDialScheme.
func lookupSSHDialer(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
	op, ok := lookupOperation(u)
	if !ok {
		return nil, errors.New("ssh: dial context expired")
	}
	forward, err := op.sshForwardDialer()
	if err != nil {
		return nil, err
	}
	return &sshDialer{op: op, forward: forward}, nil
}

// sshDialer dials the SSH connections of an operation.
type sshDialer struct {
	op      *operation
	forward proxy.ContextDialer
}

// Dial implements proxy.Dialer.
func (d *sshDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext implements proxy.ContextDialer.
func (d *sshDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.op.dial(ctx, d.forward, network, addr)
}

// sshForwardDialer returns the dialer SSH connections go through: direct,
// or the user's proxy (SOCKS5). It is built once per operation.
func (op *operation) sshForwardDialer() (proxy.ContextDialer, error) {
	op.sshOnce.Do(func() {
		op.sshForward, op.sshErr = newSSHForward(op.userProxy)
	})
	return op.sshForward, op.sshErr
}

// newSSHForward returns a dialer through the user's proxy, or a direct one.
func newSSHForward(p *ProxyOptions) (proxy.ContextDialer, error) {
	var forward proxy.Dialer = proxy.Direct
	if p != nil && p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || u.Scheme == ctxDialScheme {
			return nil, &InvalidAuthError{Reason: "proxy address is not a URL"}
		}
		if p.Username != "" {
			u.User = url.UserPassword(p.Username, p.Password)
		}
		if forward, err = proxy.FromURL(u, proxy.Direct); err != nil {
			return nil, err
		}
	}
	cd, ok := forward.(proxy.ContextDialer)
	if !ok {
		return nil, errors.New("ssh: proxy does not support dialing with a context")
	}
	return cd, nil
}
