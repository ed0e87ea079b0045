// Package sandbox renders Helm charts in a child process whose memory,
// output and time are bounded, so that a chart written to exhaust them
// (sprig's until and repeat, a range over a billion, a tpl that expands
// itself) ends its own render with a clear error instead of the process
// that serves every tenant.
//
// The child is the running binary itself, started with an environment
// variable that this package's init function recognises: any binary that
// links the package, tests included, can serve as its own sandbox. The
// parent hands the child the chart, the values and the release's
// metadata, answers its lookup calls with the parent's client, and turns
// what the child rendered into a chart of literal templates (Literal), so
// that the Helm action that follows renders nothing a chart could abuse.
package sandbox
