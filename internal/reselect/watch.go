package reselect

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// proxyWatch forwards the events of a watch until it is stopped, or until
// it expires: then it sends a 410 Expired error event. Either way it stops
// the watch it forwards and closes its result channel.
type proxyWatch struct {
	inner      watch.Interface
	out        chan watch.Event
	expired    chan struct{}
	stopped    chan struct{}
	expireOnce sync.Once
	stopOnce   sync.Once
	// done runs when the proxy has ended.
	done func()
}

var _ watch.Interface = &proxyWatch{}

// newProxyWatch returns a proxy of inner; run makes it forward.
func newProxyWatch(inner watch.Interface) *proxyWatch {
	return &proxyWatch{
		inner:   inner,
		out:     make(chan watch.Event),
		expired: make(chan struct{}),
		stopped: make(chan struct{}),
		done:    func() {},
	}
}

// ResultChan returns the channel of the forwarded events.
func (p *proxyWatch) ResultChan() <-chan watch.Event { return p.out }

// Stop ends the proxy; it may be called any number of times.
func (p *proxyWatch) Stop() { p.stopOnce.Do(func() { close(p.stopped) }) }

// expire makes the proxy end with a 410 Expired error event; it may be
// called any number of times.
func (p *proxyWatch) expire() { p.expireOnce.Do(func() { close(p.expired) }) }

// run forwards the events until the proxy stops or expires, or inner ends.
func (p *proxyWatch) run() {
	defer p.done()
	defer close(p.out)
	defer p.inner.Stop()
	in := p.inner.ResultChan()
	for {
		select {
		case <-p.stopped:
			return
		case <-p.expired:
			p.sendExpired()
			return
		case ev, ok := <-in:
			if !ok || !p.forward(ev) {
				return
			}
		}
	}
}

// forward sends ev unless the proxy stops or expires first. It reports
// whether to go on.
func (p *proxyWatch) forward(ev watch.Event) bool {
	select {
	case p.out <- ev:
		return true
	case <-p.stopped:
		return false
	case <-p.expired:
		p.sendExpired()
		return false
	}
}

// sendExpired sends the 410 Expired error event, unless the proxy stops
// first.
func (p *proxyWatch) sendExpired() {
	status := expired().ErrStatus
	select {
	case p.out <- watch.Event{Type: watch.Error, Object: &status}:
	case <-p.stopped:
	}
}
