package cli

import (
	"fmt"
	"io"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// progress shows the phase of the object a verb waits for: on a terminal,
// a spinner with the controller's Reconciling message while it works, or
// what the object waits for; off a terminal, a line each time the object
// starts waiting for something else (a source, a dependency, a gate).
type progress struct {
	w       io.Writer
	spinner *term.Spinner
	what    string
	waiting string
}

// newProgress starts the spinner for the object described by what, when w
// is a terminal.
func newProgress(w io.Writer, what string) *progress {
	p := &progress{w: w, what: what}
	if term.IsTerminal(w) {
		p.spinner = term.NewSpinner(w)
		p.spinner.Start(what + ": waiting for the controller")
	}
	return p
}

// observe shows the phase obj reports; handled says whether the run the
// verb waits for has begun, so that what an earlier run waited for is not
// shown as the news.
func (p *progress) observe(obj conditions.Getter, generation int64, handled bool) {
	waiting := ""
	if handled {
		waiting = waitingFor(obj, generation)
	}
	if p.spinner != nil {
		p.spinner.SetText(p.what + ": " + p.phase(obj, waiting))
	} else if waiting != "" && waiting != p.waiting {
		fmt.Fprintf(p.w, "◎ %s waits: %s\n", p.what, waiting)
	}
	p.waiting = waiting
}

// phase is the spinner's text: what obj waits for, else what its
// controller says it is doing.
func (p *progress) phase(obj conditions.Getter, waiting string) string {
	if waiting != "" {
		return "waits: " + waiting
	}
	if c := conditions.Get(obj, meta.ReconcilingCondition); c != nil && c.Status == "True" && c.Message != "" {
		return firstLine(c.Message)
	}
	return "waiting for the controller"
}

// stop erases the spinner.
func (p *progress) stop() {
	if p.spinner != nil {
		p.spinner.Stop()
	}
}
