package values_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/helm/values"
)

// TestDigestMatchesRelease checks that Digest is the release package's
// config digest, which status.history[].configDigest holds.
func TestDigestMatchesRelease(t *testing.T) {
	for _, v := range []map[string]any{
		nil,
		{},
		{"b": map[string]any{"y": []any{1, "two", nil}, "x": true}, "a": 1.5},
	} {
		NewWithT(t).Expect(values.Digest(v)).To(Equal(release.ConfigDigest(v)))
	}
}
