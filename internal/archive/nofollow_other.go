//go:build !unix

package archive

// noFollow is not available on this platform; SecureJoin already resolved
// the path.
const noFollow = 0
