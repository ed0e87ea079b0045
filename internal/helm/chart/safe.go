package chart

import "fmt"

// maxPanicText bounds how much of a panic value an error repeats: a panic in
// a template engine can carry large, possibly sensitive, input.
const maxPanicText = 512

// Safely runs fn and returns its error, or an error describing the panic if
// fn panics, so that a chart that crashes the Helm SDK fails one object and
// not the process. Wrap loads and renders in it.
func Safely(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			text := fmt.Sprint(r)
			if len(text) > maxPanicText {
				text = text[:maxPanicText] + "..."
			}
			err = fmt.Errorf("recovered from a panic: %s", text)
		}
	}()
	return fn()
}
