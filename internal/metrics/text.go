package metrics

import (
	"bufio"
	"math"
	"strconv"
	"strings"
)

// textWriter writes samples in Prometheus's text exposition format
// (version 0.0.4), through one reused buffer: the series about every
// object, thousands of them, cost a scrape no allocation each.
type textWriter struct {
	w   *bufio.Writer
	buf []byte
	// only, when not nil, names the families to write; the samples of the
	// others are left out (skip).
	only map[string]bool
	skip bool
}

// wants reports whether any of the families names is written.
func (t *textWriter) wants(names ...string) bool {
	if t.only == nil {
		return true
	}
	for _, n := range names {
		if t.only[n] {
			return true
		}
	}
	return false
}

// family writes the HELP and TYPE lines of the family name, and the
// samples that follow, unless the scrape asked for other families only.
func (t *textWriter) family(name, help, typ string) {
	if t.skip = !t.wants(name); t.skip {
		return
	}
	t.buf = append(t.buf[:0], "# HELP "...)
	t.buf = append(t.buf, name...)
	t.buf = append(t.buf, ' ')
	t.buf = appendEscaped(t.buf, help, false)
	t.buf = append(t.buf, "\n# TYPE "...)
	t.buf = append(t.buf, name...)
	t.buf = append(t.buf, ' ')
	t.buf = append(t.buf, typ...)
	t.buf = append(t.buf, '\n')
	_, _ = t.w.Write(t.buf)
}

// sample writes one sample of name with the labels names=values, then
// the label extra="extraValue" when extra is not empty.
func (t *textWriter) sample(name string, names, values []string, extra, extraValue string, v float64) {
	if t.skip {
		return
	}
	t.buf = append(t.buf[:0], name...)
	sep := byte('{')
	for i, n := range names {
		t.buf = appendLabel(t.buf, sep, n, values[i])
		sep = ','
	}
	if extra != "" {
		t.buf = appendLabel(t.buf, sep, extra, extraValue)
		sep = ','
	}
	if sep == ',' {
		t.buf = append(t.buf, '}')
	}
	t.buf = append(t.buf, ' ')
	t.buf = appendValue(t.buf, v)
	t.buf = append(t.buf, '\n')
	_, _ = t.w.Write(t.buf)
}

// appendLabel appends sep, then name="value" with value escaped.
func appendLabel(b []byte, sep byte, name, value string) []byte {
	b = append(b, sep)
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendEscaped appends s with backslashes and line feeds escaped, and
// double quotes too in a label value.
func appendEscaped(b []byte, s string, quotes bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quotes:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendValue appends v as the text format writes numbers.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
