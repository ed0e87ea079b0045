package registry

import (
	"bufio"
	"container/heap"
	"os"
	"slices"
)

// sortRunLines is how many lines sortLines sorts in memory at once: 10 000
// tags of at most 128 bytes, about 1.3 MB.
const sortRunLines = 10_000

// sortLines hands the lines of the file at path to add in byte order,
// with memory bounded whatever their number: it sorts runs of
// sortRunLines lines into temporary files of dir, then merges the runs.
func sortLines(dir, path string, add func(string) error) error {
	runs, err := writeRuns(dir, path)
	defer func() {
		for _, run := range runs {
			os.Remove(run)
		}
	}()
	if err != nil {
		return err
	}
	return mergeRuns(runs, add)
}

// writeRuns writes the lines of the file at path to sorted runs of at
// most sortRunLines lines and returns their paths.
func writeRuns(dir, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines := newLineScanner(f)
	var runs []string
	chunk := make([]string, 0, sortRunLines)
	for more := true; more; {
		if more = lines.Scan(); more {
			chunk = append(chunk, lines.Text())
		}
		if len(chunk) == sortRunLines || (!more && len(chunk) > 0) {
			run, err := writeRun(dir, chunk)
			if err != nil {
				return runs, err
			}
			runs, chunk = append(runs, run), chunk[:0]
		}
	}
	return runs, lines.Err()
}

// writeRun sorts chunk and writes it to a temporary file of dir.
func writeRun(dir string, chunk []string) (string, error) {
	slices.Sort(chunk)
	return writeTemp(dir, ".run-*.tmp", false, func(w *bufio.Writer) error {
		for _, line := range chunk {
			if _, err := w.WriteString(line + "\n"); err != nil {
				return err
			}
		}
		return nil
	})
}

// mergeRuns hands the lines of the sorted runs to add in byte order.
func mergeRuns(paths []string, add func(string) error) error {
	heads := make(runHeads, 0, len(paths))
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		lines := newLineScanner(f)
		if lines.Scan() {
			heads = append(heads, runHead{line: lines.Text(), lines: lines})
		} else if err := lines.Err(); err != nil {
			return err
		}
	}
	heap.Init(&heads)
	for len(heads) > 0 {
		top := &heads[0]
		if err := add(top.line); err != nil {
			return err
		}
		if top.lines.Scan() {
			top.line = top.lines.Text()
			heap.Fix(&heads, 0)
			continue
		}
		if err := top.lines.Err(); err != nil {
			return err
		}
		heap.Pop(&heads)
	}
	return nil
}

// runHead is the next line of a run.
type runHead struct {
	line  string
	lines *bufio.Scanner
}

// runHeads is a min-heap of the runs by their next line.
type runHeads []runHead

func (h runHeads) Len() int           { return len(h) }
func (h runHeads) Less(i, j int) bool { return h[i].line < h[j].line }
func (h runHeads) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeads) Push(x any)        { *h = append(*h, x.(runHead)) }
func (h *runHeads) Pop() any {
	old := *h
	last := old[len(old)-1]
	*h = old[:len(old)-1]
	return last
}
