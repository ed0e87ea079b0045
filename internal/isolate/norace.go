//go:build !race

package isolate

// capAddressSpace says whether a child caps its address space a little
// above its memory limit.
const capAddressSpace = true
