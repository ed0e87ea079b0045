package devenv

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/controlplane"
)

// printer writes what a dev run does: phases with their outcome, and lines.
// On a terminal the phase under way is a spinner line with its elapsed
// time; elsewhere every message is a plain line.
type printer struct {
	mu sync.Mutex
	w  io.Writer
	// spinner shows the phase on a terminal; nil elsewhere.
	spinner *term.Spinner
}

func newPrinter(w io.Writer, terminal bool) *printer {
	p := &printer{w: w}
	if terminal {
		p.spinner = term.NewSpinner(w)
	}
	return p
}

// line prints one line (above the phase line on a terminal).
func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.println(fmt.Sprintf(format, args...))
}

func (p *printer) println(line string) {
	if p.spinner != nil {
		p.spinner.Println(line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// phase starts a phase and returns the function that ends it: with an
// error, or with a detail (a format and its arguments). The function
// returns the error it was given.
func (p *printer) phase(format string, args ...any) func(err error, detail ...any) error {
	name := fmt.Sprintf(format, args...)
	start := time.Now()
	p.mu.Lock()
	if p.spinner != nil {
		p.spinner.Start(name + "…")
	} else {
		fmt.Fprintf(p.w, "… %s\n", name)
	}
	p.mu.Unlock()
	return func(err error, detail ...any) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.spinner != nil {
			p.spinner.Stop()
		}
		took := time.Since(start).Round(100 * time.Millisecond)
		switch {
		case err != nil:
			p.println(fmt.Sprintf("✗ %s failed after %s: %v", name, took, err))
		case len(detail) > 0 && detail[0] != "":
			p.println(fmt.Sprintf("✔ %s (%s): %s", name, took, fmt.Sprintf(detail[0].(string), detail[1:]...)))
		default:
			p.println(fmt.Sprintf("✔ %s (%s)", name, took))
		}
		return err
	}
}

// buildProgress shows the build of each control-plane binary as a phase.
func (p *printer) buildProgress() controlplane.Progress {
	return &buildPhases{p: p}
}

type buildPhases struct {
	p    *printer
	done func(error, ...any) error
}

func (b *buildPhases) Building(bin controlplane.Binary, index, total int) {
	b.done = b.p.phase("building %s (%d of %d) from %s", bin.Name, index, total, bin.Package)
}

func (b *buildPhases) Built(_ controlplane.Binary, _ time.Duration, err error) {
	_ = b.done(err)
}
