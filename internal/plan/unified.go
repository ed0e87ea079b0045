package plan

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the work of a line diff: past it, the whole text is
// shown as replaced.
const maxDiffCells = 4 << 20

// lineEdit is one line of an edit script: ' ' kept, '-' removed, '+'
// added.
type lineEdit struct {
	op   byte
	text string
}

// UnifiedDiff returns the changes from a to b as unified diff hunks with
// context lines around each change; "" when a and b are equal.
func UnifiedDiff(a, b string, context int) string {
	if a == b {
		return ""
	}
	edits := editScript(splitLines(a), splitLines(b))
	var out strings.Builder
	for _, h := range hunks(edits, context) {
		writeHunk(&out, edits, h[0], h[1])
	}
	return out.String()
}

// splitLines returns the lines of s, without their line ends.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// editScript returns a shortest edit script from x to y, from their
// longest common subsequence of lines.
func editScript(x, y []string) []lineEdit {
	n, m := len(x), len(y)
	if (n+1)*(m+1) > maxDiffCells {
		edits := make([]lineEdit, 0, n+m)
		for _, l := range x {
			edits = append(edits, lineEdit{'-', l})
		}
		for _, l := range y {
			edits = append(edits, lineEdit{'+', l})
		}
		return edits
	}
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	edits := make([]lineEdit, 0, n+m)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			edits = append(edits, lineEdit{' ', x[i]})
			i++
			j++
		case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			edits = append(edits, lineEdit{'-', x[i]})
			i++
		default:
			edits = append(edits, lineEdit{'+', y[j]})
			j++
		}
	}
	return edits
}

// hunks returns the [start, end) ranges of edits that the diff shows: each
// change with up to context kept lines around it, overlapping ranges
// merged.
func hunks(edits []lineEdit, context int) [][2]int {
	var out [][2]int
	for i, e := range edits {
		if e.op == ' ' {
			continue
		}
		start, end := max(i-context, 0), min(i+1+context, len(edits))
		if n := len(out); n > 0 && start <= out[n-1][1] {
			out[n-1][1] = end
			continue
		}
		out = append(out, [2]int{start, end})
	}
	return out
}

// writeHunk writes edits[start:end] as one hunk, with its header.
func writeHunk(w *strings.Builder, edits []lineEdit, start, end int) {
	aStart, bStart := 1, 1
	for _, e := range edits[:start] {
		if e.op != '+' {
			aStart++
		}
		if e.op != '-' {
			bStart++
		}
	}
	aLen, bLen := 0, 0
	for _, e := range edits[start:end] {
		if e.op != '+' {
			aLen++
		}
		if e.op != '-' {
			bLen++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, e := range edits[start:end] {
		w.WriteByte(e.op)
		w.WriteString(e.text)
		w.WriteByte('\n')
	}
}

// hunkRange formats the line range of one side of a hunk as unified diffs
// do: an empty range names the line before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
