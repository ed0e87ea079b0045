package devenv

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/windlass-dev/windlass/internal/controlplane"
)

// spinnerFrames animate the phase line on a terminal.
var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// printer writes what a dev run does: phases with their outcome, and lines.
// On a terminal the phase under way is one line redrawn with a spinner and
// its elapsed time; elsewhere every message is a plain line.
type printer struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	// current is the phase under way ("" when none), since start.
	current string
	start   time.Time
	frame   int
	stop    chan struct{}
}

func newPrinter(w io.Writer, terminal bool) *printer {
	return &printer{w: w, terminal: terminal}
}

// line prints one line, keeping the phase line under it on a terminal.
func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, format+"\n", args...)
	p.draw()
}

// phase starts a phase and returns the function that ends it: with an
// error, or with a detail (a format and its arguments). The function
// returns the error it was given.
func (p *printer) phase(format string, args ...any) func(err error, detail ...any) error {
	p.mu.Lock()
	name := fmt.Sprintf(format, args...)
	p.current, p.start = name, time.Now()
	if p.terminal {
		p.stop = make(chan struct{})
		go p.animate(p.stop)
	} else {
		fmt.Fprintf(p.w, "… %s\n", name)
	}
	p.draw()
	p.mu.Unlock()
	return func(err error, detail ...any) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stop != nil {
			close(p.stop)
			p.stop = nil
		}
		p.clear()
		took := time.Since(p.start).Round(100 * time.Millisecond)
		p.current = ""
		switch {
		case err != nil:
			fmt.Fprintf(p.w, "✗ %s failed after %s: %v\n", name, took, err)
		case len(detail) > 0 && detail[0] != "":
			fmt.Fprintf(p.w, "✔ %s (%s): %s\n", name, took, fmt.Sprintf(detail[0].(string), detail[1:]...))
		default:
			fmt.Fprintf(p.w, "✔ %s (%s)\n", name, took)
		}
		return err
	}
}

// animate redraws the phase line until stop is closed.
func (p *printer) animate(stop chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		p.frame++
		p.clear()
		p.draw()
		p.mu.Unlock()
	}
}

// clear erases the phase line on a terminal.
func (p *printer) clear() {
	if p.terminal && p.current != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// draw writes the phase line on a terminal.
func (p *printer) draw() {
	if p.terminal && p.current != "" {
		fmt.Fprintf(p.w, "%c %s… %s", spinnerFrames[p.frame%len(spinnerFrames)], p.current, time.Since(p.start).Round(time.Second))
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
