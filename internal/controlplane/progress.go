package controlplane

import (
	"fmt"
	"io"
	"time"
)

// LineProgress returns a Progress that writes one plain line, starting with
// prefix, when a binary starts building and one when it is built: the
// output for logs and pipes.
func LineProgress(w io.Writer, prefix string) Progress {
	return lineProgress{w: w, prefix: prefix}
}

type lineProgress struct {
	w      io.Writer
	prefix string
}

func (p lineProgress) Building(b Binary, index, total int) {
	fmt.Fprintf(p.w, "%sbuilding %s (%d of %d) from %s; the first time takes several minutes\n", p.prefix, b.Name, index, total, b.Package)
}

func (p lineProgress) Built(b Binary, took time.Duration, err error) {
	if err != nil {
		fmt.Fprintf(p.w, "%sbuilding %s failed after %s\n", p.prefix, b.Name, took.Round(time.Second))
		return
	}
	fmt.Fprintf(p.w, "%sbuilt %s in %s\n", p.prefix, b.Name, took.Round(time.Second))
}
