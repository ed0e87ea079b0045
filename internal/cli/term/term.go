// Package term holds what the command line does differently on a terminal:
// a spinner line redrawn in place with its elapsed time. Off a terminal the
// commands print plain lines and never use it.
package term

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	xterm "golang.org/x/term"
)

// IsTerminal says whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && xterm.IsTerminal(int(f.Fd()))
}

// frames animate the spinner.
var frames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// eraseLine returns the cursor to the start of the line and erases it.
const eraseLine = "\r\033[K"

// Spinner is one line at the bottom of a terminal, redrawn every tenth of
// a second: a frame, a text and the time since Start. Lines printed through
// it go above it.
type Spinner struct {
	mu    sync.Mutex
	w     io.Writer
	text  string
	start time.Time
	frame int
	stop  chan struct{}
}

// NewSpinner returns a stopped spinner writing to w.
func NewSpinner(w io.Writer) *Spinner { return &Spinner{w: w} }

// Start shows the spinner with text, its clock at zero.
func (s *Spinner) Start(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.text, s.start = text, time.Now()
	if s.stop == nil {
		s.stop = make(chan struct{})
		go s.animate(s.stop)
	}
	s.draw()
}

// SetText changes the text, keeping the clock.
func (s *Spinner) SetText(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.text = text
	s.draw()
}

// Println prints a line above the spinner.
func (s *Spinner) Println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	fmt.Fprintln(s.w, line)
	s.draw()
}

// Stop erases the spinner and returns the time since Start.
func (s *Spinner) Stop() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
	return time.Since(s.start)
}

func (s *Spinner) animate(stop chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		s.frame++
		s.clear()
		s.draw()
		s.mu.Unlock()
	}
}

// running says whether the spinner is shown.
func (s *Spinner) running() bool { return s.stop != nil }

func (s *Spinner) clear() {
	if s.running() {
		fmt.Fprint(s.w, eraseLine)
	}
}

func (s *Spinner) draw() {
	if s.running() {
		fmt.Fprintf(s.w, "%c %s %s", frames[s.frame%len(frames)], s.text, time.Since(s.start).Round(time.Second))
	}
}
