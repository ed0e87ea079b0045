// Package childproc holds what the end-to-end tests and the benchmark need
// to run the windlass binary as a child process: free loopback ports, an
// output buffer that is safe to read while the child writes, and process
// attributes that end the child with its parent.
package childproc

import (
	"bytes"
	"fmt"
	"net"
	"sync"
)

// FreeAddrs returns n distinct loopback addresses whose ports were free a
// moment ago: each is listened on, with all held open at once so that they
// differ, then closed.
func FreeAddrs(n int) ([]string, error) {
	var addrs []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

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
