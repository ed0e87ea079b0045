//go:build !linux

package manager

// evictUnmapped does nothing where posix_fadvise is not served: the
// controller runs on Linux; elsewhere its pages stay cached.
func evictUnmapped(string) error { return nil }
