//go:build !race

package childproc

// capAddressSpace says whether a child caps its address space a little
// above its memory limit.
const capAddressSpace = true
