package isolate

import (
	"os"
	"sync"
	"time"
)

// What ended a child's clock.
const (
	clockRunning = iota
	clockStartup
	clockWork
)

// clock kills a child that takes longer than startupTimeout to have its
// input, or longer than its budget to do its work once it has.
type clock struct {
	budget time.Duration
	kill   func() error

	mu     sync.Mutex
	timer  *time.Timer
	ended  int
	closed bool
}

// startClock starts the startup clock of process.
func startClock(process *os.Process, budget time.Duration) *clock {
	c := &clock{budget: budget, kill: process.Kill}
	c.timer = time.AfterFunc(startupTimeout, func() { c.expire(clockStartup) })
	return c
}

// started stops the startup clock and starts the work's.
func (c *clock) started() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.ended != clockRunning || !c.timer.Stop() {
		return
	}
	c.timer = time.AfterFunc(c.budget, func() { c.expire(clockWork) })
}

// expire kills the child, noting which clock ran out.
func (c *clock) expire(which int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.ended = which
	_ = c.kill()
}

// expired returns the clock that ran out, or clockRunning.
func (c *clock) expired() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
}

// stop stops the clock for good.
func (c *clock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.timer.Stop()
}
