package devenv

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestPrinterPlainLines: off a terminal every message is a line of its
// own, with no control characters.
func TestPrinterPlainLines(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	p := newPrinter(&out, false)
	done := p.phase("starting %s", "things")
	p.line("a line in between")
	g.Expect(done(nil, "at %s", "here")).To(Succeed())
	failed := p.phase("failing")
	g.Expect(failed(errors.New("boom"))).To(MatchError("boom"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(5))
	g.Expect(lines[0]).To(Equal("… starting things"))
	g.Expect(lines[1]).To(Equal("a line in between"))
	g.Expect(lines[2]).To(MatchRegexp(`^✔ starting things \(\d+(\.\d)?m?s\): at here$`))
	g.Expect(lines[3]).To(Equal("… failing"))
	g.Expect(lines[4]).To(MatchRegexp(`^✗ failing failed after .*: boom$`))
	g.Expect(out.String()).NotTo(ContainSubstring("\r"))
}

// TestPrinterTerminal: on a terminal the phase is one line redrawn in
// place, erased before each message and replaced by its outcome.
func TestPrinterTerminal(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	p := newPrinter(&out, true)
	done := p.phase("building")
	p.line("note")
	g.Expect(done(nil)).To(Succeed())
	s := out.String()
	g.Expect(s).To(ContainSubstring("building… 0s"))
	g.Expect(s).To(ContainSubstring("\r\033[Knote\n"))
	g.Expect(s).To(MatchRegexp(`\r\033\[K✔ building \(.*\)\n$`))
	g.Expect(strings.Count(s, "✔ building")).To(Equal(1))
}
