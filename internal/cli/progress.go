package cli

import (
	"io"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/cli/term"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// progress shows, on a terminal, a spinner with the phase of the object a
// verb waits for: the controller's Reconciling message while it works.
// Off a terminal it shows nothing.
type progress struct {
	spinner *term.Spinner
	what    string
}

// newProgress starts the spinner for the object described by what, when w
// is a terminal.
func newProgress(w io.Writer, what string) *progress {
	p := &progress{what: what}
	if term.IsTerminal(w) {
		p.spinner = term.NewSpinner(w)
		p.spinner.Start(what + ": waiting for the controller")
	}
	return p
}

// observe shows the phase obj reports.
func (p *progress) observe(obj conditions.Getter) {
	if p.spinner == nil {
		return
	}
	phase := "waiting for the controller"
	if c := conditions.Get(obj, meta.ReconcilingCondition); c != nil && c.Status == "True" && c.Message != "" {
		phase = firstLine(c.Message)
	}
	p.spinner.SetText(p.what + ": " + phase)
}

// stop erases the spinner.
func (p *progress) stop() {
	if p.spinner != nil {
		p.spinner.Stop()
	}
}
