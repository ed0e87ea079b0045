package testutil

import (
	"bytes"
	"strings"
	"sync"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// capturedLevel is the most verbose level captured: V(2), past every
// level the controllers log at by default.
const capturedLevel = zapcore.Level(-2)

// Logs keeps what the controllers of a test process log, so that a test
// can assert what never appears in them (a credential, say).
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// CaptureLogs sends the controller-runtime logs of the process, up to
// V(2), to the returned Logs.
func CaptureLogs() *Logs {
	l := &Logs{}
	ctrl.SetLogger(zap.New(zap.WriteTo(l), zap.Level(capturedLevel)))
	return l
}

// Write appends p.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Contains reports whether s was logged.
func (l *Logs) Contains(s string) bool {
	return strings.Contains(l.String(), s)
}
