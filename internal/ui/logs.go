package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// Bounds of what Logs keeps of one entry, in bytes.
const (
	maxLogMessage = 1024
	maxLogFields  = 1024
)

// Logs keeps the latest lines the controllers of this process logged
// about objects, in memory and bounded, for the object pages. Its Tee
// sees every line the process's logger writes.
type Logs struct {
	now     func() time.Time
	entries *ring[logEntry]
}

// logEntry is one line logged about an object.
type logEntry struct {
	Time                  time.Time
	Level                 string
	Kind, Namespace, Name string
	Message, Fields       string
}

// NewLogs returns a Logs that keeps the latest size lines about objects.
func NewLogs(size int) *Logs {
	return &Logs{now: time.Now, entries: newRing[logEntry](size)}
}

// Tee returns a sink that writes to sink and keeps, of what sink writes,
// the lines about one object: those of a reconciler, whose logger names
// its object (controllerKind, namespace, name). A nil sink, which
// discards every line, stays nil: nothing is written, so nothing is kept.
func (l *Logs) Tee(sink logr.LogSink) logr.LogSink {
	if sink == nil {
		return nil
	}
	if withDepth, ok := sink.(logr.CallDepthLogSink); ok {
		sink = withDepth.WithCallDepth(1) // the tee's own frame
	}
	return &teeSink{logs: l, sink: sink}
}

// about returns the newest max lines about the object kind namespace/name.
func (l *Logs) about(kind, namespace, name string, max int) []logEntry {
	if l == nil {
		return nil
	}
	return l.entries.newest(max, func(e logEntry) bool {
		return e.Kind == kind && e.Namespace == namespace && e.Name == name
	})
}

// teeSink is the sink of Logs.Tee.
type teeSink struct {
	logs *Logs
	sink logr.LogSink
	// values are the key/value pairs given to WithValues.
	values []any
}

// Init does nothing: the sink teed was initialised by its own logger.
func (t *teeSink) Init(logr.RuntimeInfo) {}

// Enabled reports whether the sink writes lines of level.
func (t *teeSink) Enabled(level int) bool { return t.sink.Enabled(level) }

// Info writes the line, and keeps it when it is about an object.
func (t *teeSink) Info(level int, msg string, kv ...any) {
	t.sink.Info(level, msg, kv...)
	t.keep(levelName(level), msg, kv)
}

// Error writes the line, and keeps it when it is about an object.
func (t *teeSink) Error(err error, msg string, kv ...any) {
	t.sink.Error(err, msg, kv...)
	t.keep("error", msg, append([]any{"error", err}, kv...))
}

// WithValues returns a tee of the sink with the values.
func (t *teeSink) WithValues(kv ...any) logr.LogSink {
	values := append(append(make([]any, 0, len(t.values)+len(kv)), t.values...), kv...)
	return &teeSink{logs: t.logs, sink: t.sink.WithValues(kv...), values: values}
}

// WithName returns a tee of the named sink.
func (t *teeSink) WithName(name string) logr.LogSink {
	return &teeSink{logs: t.logs, sink: t.sink.WithName(name), values: t.values}
}

// identityKeys are the values that name a reconciler's object and run,
// which the kept line does not repeat.
var identityKeys = map[string]bool{"controller": true, "controllerGroup": true, "controllerKind": true,
	"namespace": true, "name": true, "reconcileID": true}

// keep adds the line to the logs when its values name an object.
func (t *teeSink) keep(level, msg string, kv []any) {
	e := logEntry{Level: level}
	pairs := [][]any{t.values, kv}
	for _, p := range pairs {
		for i := 0; i+1 < len(p); i += 2 {
			switch key, _ := p[i].(string); key {
			case "controllerKind":
				e.Kind = fmt.Sprint(p[i+1])
			case "namespace":
				e.Namespace = fmt.Sprint(p[i+1])
			case "name":
				e.Name = fmt.Sprint(p[i+1])
			}
		}
	}
	if e.Kind == "" || e.Name == "" {
		return
	}
	var fields strings.Builder
	for _, p := range pairs {
		for i := 0; i+1 < len(p) && fields.Len() < maxLogFields; i += 2 {
			if key, _ := p[i].(string); !identityKeys[key] && key != e.Kind {
				fmt.Fprintf(&fields, "%s=%v ", key, p[i+1])
			}
		}
	}
	e.Message, e.Fields = cut(msg, maxLogMessage), cut(strings.TrimSpace(fields.String()), maxLogFields)
	e.Time = t.logs.now()
	t.logs.entries.add(e)
}

// levelName names a logr level as the controller's log does.
func levelName(level int) string {
	switch {
	case level <= 0:
		return "info"
	case level == 1:
		return "debug"
	}
	return "trace"
}

// cut returns s, cut to max bytes with an ellipsis.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

// logList is what the logs part of a page shows.
type logList struct {
	Entries []logEntry
	NoLogs  bool
	Now     time.Time
}

// objectLogs is how many log lines an object's page shows.
const objectLogs = 50

// logsAbout returns the logs part of the page of kind namespace/name.
func (s *Server) logsAbout(kind, namespace, name string) logList {
	return logList{Entries: s.Logs.about(kind, namespace, name, objectLogs), NoLogs: s.Logs == nil, Now: s.now()}
}
