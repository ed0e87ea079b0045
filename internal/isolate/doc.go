// Package isolate runs work that a tenant's input could make exhaust the
// process (a chart's templates, a kustomize build) in a child process of
// the running binary, bounded in memory, output and time, so that the work
// ends with a clear error instead of the process that serves every tenant.
//
// The child is the running binary itself, started with an environment
// variable that names its role; the package that does the work registers
// the role with Serve from an init function, so that any binary linking
// it, tests included, can serve as its own child. The parent and the
// child speak over the child's standard input and output, in whatever
// protocol the role's package chooses.
//
// A Pool bounds the memory of all children together: a child starts only
// once the pool has its memory limit free, and the rest of the process's
// memory can be planned around the pool's total. Turns bound how many
// children of one kind of work run at once, and give a child whose job
// ended well the next job, one job at a time, rather than start another
// (a start costs more CPU than most jobs).
package isolate
