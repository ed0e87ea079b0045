// Package parallel runs independent pieces of work at the same time, a
// bounded number at once, and turns a panic in one of them into an error
// for that piece alone: controller-runtime recovers panics in Reconcile,
// but a panic in a goroutine that Reconcile starts would end the process.
package parallel

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// PanicError is a panic recovered from one piece of work. Its message holds
// the panic value; the stack is logged where the panic is recovered and
// kept here, never put in the message, so that it stays out of conditions
// and events.
type PanicError struct {
	// Index is the index of the piece of work in Do; 0 for Call.
	Index int
	// Value is what the work passed to panic.
	Value any
	// Stack is the stack of the goroutine when it panicked.
	Stack []byte
}

// Error returns "panicked: <value>".
func (e *PanicError) Error() string {
	return fmt.Sprintf("panicked: %v", e.Value)
}

// Do calls f(0) … f(n-1), at most limit at once (one at a time when limit is
// below one), and returns when every call has returned. With one piece of
// work, or one at a time, f runs on the calling goroutine, in order.
//
// A call that panics does not stop the others: Do returns the panics in
// the order of their indexes, each stack logged to the logger of ctx. The
// caller must treat the Index of each as failed, since f did not finish
// it. Without panics the result is empty.
func Do(ctx context.Context, n, limit int, f func(i int)) []*PanicError {
	panics := make([]*PanicError, n)
	run := func(i int) { panics[i] = call(ctx, i, func() { f(i) }) }
	if n == 1 || limit <= 1 {
		for i := range n {
			run(i)
		}
	} else {
		spread(n, limit, run)
	}
	return slices.DeleteFunc(panics, func(p *PanicError) bool { return p == nil })
}

// Call calls f on the calling goroutine and returns a *PanicError when f
// panics, with the stack logged to the logger of ctx; nil otherwise. It
// guards a goroutine that a caller starts on its own.
func Call(ctx context.Context, f func()) error {
	if p := call(ctx, 0, f); p != nil {
		return p
	}
	return nil
}

// spread runs run(0) … run(n-1) in goroutines, at most limit at once.
func spread(n, limit int, run func(i int)) {
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			run(i)
		}()
	}
	wg.Wait()
}

// call calls f and recovers its panic, if any, as the piece of work i.
func call(ctx context.Context, i int, f func()) (p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = &PanicError{Index: i, Value: v, Stack: debug.Stack()}
			log.FromContext(ctx).Error(p, "Recovered a panic in a piece of work", "index", i, "stack", string(p.Stack))
		}
	}()
	f()
	return nil
}
