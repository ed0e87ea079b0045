package reselect

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// proxyWatch sends its preamble, then forwards the events of a watch until
// it is stopped or ended. Either way it stops the watch it forwards and
// closes its result channel, without an error event: the informer then
// watches again from where it was.
type proxyWatch struct {
	inner    watch.Interface
	preamble []watch.Event
	out      chan watch.Event
	stopped  chan struct{}
	ended    chan struct{}
	stopOnce sync.Once
	endOnce  sync.Once
	// done runs when the proxy has ended.
	done func()
}

var _ watch.Interface = &proxyWatch{}

// newProxyWatch returns a proxy of inner that first sends preamble; run
// makes it forward.
func newProxyWatch(inner watch.Interface, preamble []watch.Event) *proxyWatch {
	return &proxyWatch{
		inner:    inner,
		preamble: preamble,
		out:      make(chan watch.Event),
		stopped:  make(chan struct{}),
		ended:    make(chan struct{}),
		done:     func() {},
	}
}

// ResultChan returns the channel of the forwarded events.
func (p *proxyWatch) ResultChan() <-chan watch.Event { return p.out }

// Stop ends the proxy; it may be called any number of times.
func (p *proxyWatch) Stop() { p.stopOnce.Do(func() { close(p.stopped) }) }

// end makes the proxy end once its preamble is sent; it may be called any
// number of times.
func (p *proxyWatch) end() { p.endOnce.Do(func() { close(p.ended) }) }

// run sends the preamble, then forwards the events until the proxy stops
// or ends, or inner ends.
func (p *proxyWatch) run() {
	defer p.done()
	defer close(p.out)
	defer p.inner.Stop()
	// The preamble ends with the resource version the watch resumes
	// from: ending before it would leave the informer to resume from an
	// older one.
	for _, ev := range p.preamble {
		if !p.forward(ev, nil) {
			return
		}
	}
	p.preamble = nil
	in := p.inner.ResultChan()
	for {
		select {
		case <-p.stopped:
			return
		case <-p.ended:
			return
		case ev, ok := <-in:
			if !ok || !p.forward(ev, p.ended) {
				return
			}
		}
	}
}

// forward sends ev unless the proxy stops, or ended is closed, first. It
// reports whether to go on.
func (p *proxyWatch) forward(ev watch.Event, ended <-chan struct{}) bool {
	select {
	case p.out <- ev:
		return true
	case <-p.stopped:
		return false
	case <-ended:
		return false
	}
}
