package plan

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestUnifiedDiff: hunks with three lines of context, merged when close,
// and the line ranges of unified diffs.
func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{name: "equal", a: "a\nb\n", b: "a\nb\n", want: ""},
		{name: "one line changed in the middle", a: "1\n2\n3\n4\n5\n6\n7\n8\n9\n", b: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			want: "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{name: "two changes far apart make two hunks", a: "a\n1\n2\n3\n4\n5\n6\n7\nb\n", b: "A\n1\n2\n3\n4\n5\n6\n7\nB\n",
			want: "@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n"},
		{name: "a line added at the end", a: "a\n", b: "a\nb\n", want: "@@ -1 +1,2 @@\n a\n+b\n"},
		{name: "everything removed", a: "a\n", b: "", want: "@@ -1 +0,0 @@\n-a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(UnifiedDiff(tt.a, tt.b, 3)).To(Equal(tt.want))
		})
	}
}
