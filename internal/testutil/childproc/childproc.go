// Package childproc holds what the end-to-end tests and the benchmark need
// to run the windlass binary as a child process: free loopback ports, an
// output buffer that is safe to read while the child writes, and process
// attributes that end the child with its parent.
package childproc

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that is safe for concurrent writes and reads.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
