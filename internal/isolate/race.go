//go:build race

package isolate

// capAddressSpace is false under the race detector, whose shadow memory
// needs address space far beyond the limit; the memory watchdog still
// bounds the child.
const capAddressSpace = false
