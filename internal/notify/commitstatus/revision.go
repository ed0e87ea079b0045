package commitstatus

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// sha1HexLen is the length of a Git SHA-1 in hex.
const sha1HexLen = 40

// CommitOf returns the Git commit SHA-1 that revision names, in lower
// case: "<ref>@sha1:<hex>", "sha1:<hex>", the legacy "<branch>/<hex>" or a
// bare SHA-1. It reports false for anything else, a "sha256:" digest
// included (see the package documentation).
func CommitOf(revision string) (string, bool) {
	rev := revision
	if i := strings.LastIndex(rev, "@"); i >= 0 {
		rev = rev[i+1:]
	}
	if algo, digest, ok := strings.Cut(rev, ":"); ok {
		if algo != "sha1" {
			return "", false
		}
		rev = digest
	} else if i := strings.LastIndex(rev, "/"); i >= 0 {
		rev = rev[i+1:]
	}
	if !isHex(rev, sha1HexLen) {
		return "", false
	}
	return strings.ToLower(rev), true
}

func isHex(s string, length int) bool {
	if len(s) != length {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// hashedKey returns key when it fits in limit bytes, else the first limit
// hex digits of its SHA-256: the same key always gives the same hash, so
// the status is still updated in place.
func hashedKey(key string, limit int) string {
	if len(key) <= limit {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:limit]
}
