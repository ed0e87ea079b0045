package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// controllerPodSelector selects the pods of the Windlass controllers: the
// install manifests (config/manager, and each Deployment of a split
// install) label them so.
const controllerPodSelector = "app.kubernetes.io/part-of=windlass"

// maxLogLine is the longest log line read; a longer one is an error.
const maxLogLine = 1 << 20

// followPoll is how often a followed file is looked at for new lines.
const followPoll = 250 * time.Millisecond

// logsFlags are the flags of `windlass logs`.
type logsFlags struct {
	kube                                         kubeFlags
	kind, name, objectNamespace, level, fromFile string
	since                                        time.Duration
	tail                                         int64
	follow                                       bool
}

func newLogsCommand() *cobra.Command {
	f := &logsFlags{}
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Show the logs of the Windlass controllers",
		Long: `Show the logs of the Windlass controllers, one line each: time, level, the
object a line is about, the message and its values. The logs are read from
the controller pods of the namespace (-n, default flux-system), or from a file
(--from-file); on the cluster of windlass dev, from the log it writes. --kind, --name,
--namespace-of-object, --level and --since keep only the lines that match;
lines that are not JSON are shown as they are unless one of them is set.`,
		Example: `  windlass logs --kind ks --name app --level error
  windlass logs --since 1h -f
  windlass logs --from-file ~/.cache/windlass/dev/windlass.log --tail 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	f.kube.bind(cmd)
	cmd.PersistentFlags().Lookup("namespace").Usage = "the namespace of the Windlass controller pods"
	fs := cmd.Flags()
	fs.StringVar(&f.kind, "kind", "", "only the lines about objects of this kind, e.g. Kustomization or ks")
	fs.StringVar(&f.name, "name", "", "only the lines about objects of this name")
	fs.StringVar(&f.objectNamespace, "namespace-of-object", "", "only the lines about objects of this namespace")
	fs.StringVar(&f.level, "level", "", "only the lines of this level or above: error, info, debug or trace")
	fs.DurationVar(&f.since, "since", 0, "only the lines of this last while, e.g. 1h")
	fs.Int64Var(&f.tail, "tail", -1, "start from the last N lines of the log (counted before filtering); -1 for all")
	fs.BoolVarP(&f.follow, "follow", "f", false, "go on printing new lines, until interrupted")
	fs.StringVar(&f.fromFile, "from-file", "", "read this log file instead of the controller pods, e.g. ~/.cache/windlass/dev/windlass.log")
	return cmd
}

// run reads the log and prints the lines that pass the filter.
func (f *logsFlags) run(cmd *cobra.Command) error {
	filter, err := f.filter()
	if err != nil {
		return err
	}
	if f.tail < -1 {
		return fmt.Errorf("invalid --tail %d: give a number of lines, or -1 for all", f.tail)
	}
	p := &logPrinter{w: cmd.OutOrStdout(), filter: filter}
	if f.fromFile == "" {
		if cfg, err := f.kube.restConfig(); err == nil {
			if dev, ok := f.kube.devRun(cfg); ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "reading the log of windlass dev (pid %d): %s\n", dev.PID, dev.Log)
				f.fromFile = dev.Log
			}
		}
	}
	if f.fromFile != "" {
		if f.since > 0 {
			p.filter.since = now().Add(-f.since)
		}
		return f.readFile(cmd.Context(), p)
	}
	return f.readPods(cmd.Context(), p, cmd.ErrOrStderr())
}

// filter returns the filter the flags set.
func (f *logsFlags) filter() (logFilter, error) {
	filter := logFilter{name: f.name, namespace: f.objectNamespace, minLevel: minLevelAll}
	if f.kind != "" {
		k, err := lookupKind(f.kind)
		if err != nil {
			return filter, fmt.Errorf("--kind: %w", err)
		}
		filter.kind = k.kind
	}
	if f.level != "" {
		lvl, ok := logLevels[f.level]
		if !ok {
			return filter, fmt.Errorf("invalid --level %q: choose error, info, debug or trace", f.level)
		}
		filter.minLevel = lvl
	}
	if f.since < 0 {
		return filter, fmt.Errorf("invalid --since %s: give a positive duration, e.g. 1h", f.since)
	}
	return filter, nil
}

// readFile prints the lines of --from-file, then follows it when asked.
func (f *logsFlags) readFile(ctx context.Context, p *logPrinter) error {
	path := f.fromFile
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, rest)
		}
	}
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the log: %w", err)
	}
	defer file.Close()
	t := &tailer{n: f.tail, next: p.line}
	return readLines(ctx, file, f.follow, t.add, t.flush)
}

// readPods prints the logs of the controller pods: one after the other, or
// all at once when following them.
func (f *logsFlags) readPods(ctx context.Context, p *logPrinter, errOut io.Writer) error {
	pods, streams, err := f.openPodLogs(ctx, errOut)
	defer func() {
		for _, s := range streams {
			_ = s.Close()
		}
	}()
	if err != nil {
		return err
	}
	if f.follow {
		return mergeStreams(ctx, streams, p)
	}
	for i, s := range streams {
		if err := readLines(ctx, s, false, p.line, nil); err != nil {
			return fmt.Errorf("pod %s/%s: %w", pods[i].Namespace, pods[i].Name, err)
		}
	}
	return nil
}

// openPodLogs finds the controller pods and opens the stream of each one's
// log, in the order of their names.
func (f *logsFlags) openPodLogs(ctx context.Context, errOut io.Writer) ([]corev1.Pod, []io.ReadCloser, error) {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	ns := f.kube.namespace
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: controllerPodSelector})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the Windlass controller pods in namespace %s: %w", ns, err)
	}
	pods := list.Items
	if len(pods) == 0 {
		return nil, nil, fmt.Errorf("no Windlass controller pods in namespace %s (is Windlass installed? windlass check)", ns)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	streams := make([]io.ReadCloser, 0, len(pods))
	for i := range pods {
		if pods[i].Spec.NodeName == "" {
			fmt.Fprintf(errOut, "pod %s/%s is not scheduled on a node yet: it has no logs\n", ns, pods[i].Name)
		}
		s, err := cs.CoreV1().Pods(ns).GetLogs(pods[i].Name, f.podLogOptions(&pods[i])).Stream(ctx)
		if err != nil {
			return pods, streams, fmt.Errorf("reading the logs of pod %s/%s: %w", ns, pods[i].Name, err)
		}
		streams = append(streams, s)
	}
	return pods, streams, nil
}

// podLogOptions are the log options of the controller container of pod.
func (f *logsFlags) podLogOptions(pod *corev1.Pod) *corev1.PodLogOptions {
	opts := &corev1.PodLogOptions{Follow: f.follow}
	for i, c := range pod.Spec.Containers {
		if i == 0 || c.Name == "manager" {
			opts.Container = c.Name
		}
	}
	if f.since > 0 {
		seconds := max(int64(f.since.Seconds()), 1)
		opts.SinceSeconds = &seconds
	}
	if f.tail >= 0 {
		opts.TailLines = &f.tail
	}
	return opts
}

// mergeStreams prints the lines of all streams as they come, until they
// end or ctx does.
func mergeStreams(ctx context.Context, streams []io.ReadCloser, p *logPrinter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan []byte)
	errs := make(chan error, len(streams))
	for _, s := range streams {
		go func() {
			errs <- readLines(ctx, s, false, func(line []byte) error {
				select {
				case lines <- bytes.Clone(line):
				case <-ctx.Done():
				}
				return nil
			}, nil)
		}()
	}
	for open := len(streams); open > 0; {
		select {
		case <-ctx.Done():
			return nil
		case line := <-lines:
			if err := p.line(line); err != nil {
				return err
			}
		case err := <-errs:
			if err != nil && ctx.Err() == nil {
				return err
			}
			open--
		}
	}
	return nil
}

// errLineTooLong is returned for a line longer than maxLogLine.
var errLineTooLong = fmt.Errorf("a log line is longer than %d bytes", maxLogLine)

// readLines calls each with every line of r, without its line ending, and
// atEnd (when not nil) the first time it reaches the end of r. Following,
// it then waits for more lines until ctx ends; an unfinished last line
// waits for its end.
func readLines(ctx context.Context, r io.Reader, follow bool, each func([]byte) error, atEnd func() error) error {
	br := bufio.NewReaderSize(r, maxLogLine)
	var partial []byte
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line := chunk
			if len(partial) > 0 {
				line, partial = append(partial, chunk...), nil
			}
			if len(line) > maxLogLine {
				return errLineTooLong
			}
			if err := each(bytes.TrimRight(line, "\r\n")); err != nil {
				return err
			}
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			return errLineTooLong
		case !errors.Is(err, io.EOF):
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading the log: %w", err)
		}
		partial = append(partial, chunk...)
		if len(partial) > maxLogLine {
			return errLineTooLong
		}
		if !follow && len(partial) > 0 {
			if err := each(partial); err != nil {
				return err
			}
			partial = nil
		}
		if atEnd != nil {
			if err := atEnd(); err != nil {
				return err
			}
			atEnd = nil
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

// tailer passes on the last n lines it is given once flushed, and every
// line after that; n < 0 passes on every line.
type tailer struct {
	n       int64
	next    func([]byte) error
	ring    [][]byte
	flushed bool
}

// add keeps line, or passes it on once flushed.
func (t *tailer) add(line []byte) error {
	if t.n < 0 || t.flushed {
		return t.next(line)
	}
	if t.n == 0 {
		return nil
	}
	if int64(len(t.ring)) == t.n {
		t.ring = t.ring[1:]
	}
	t.ring = append(t.ring, bytes.Clone(line))
	return nil
}

// flush passes on the lines kept.
func (t *tailer) flush() error {
	t.flushed = true
	for _, line := range t.ring {
		if err := t.next(line); err != nil {
			return err
		}
	}
	t.ring = nil
	return nil
}

// minLevelAll is the least level of a filter that keeps every level.
const minLevelAll = math.MinInt

// logLevels are the words of --level and the least zap level each keeps.
var logLevels = map[string]int{"error": 2, "info": 0, "debug": -1, "trace": minLevelAll}

// logFilter keeps the lines about objects of one kind, name or namespace,
// of a level or above, since a time.
type logFilter struct {
	kind, name, namespace string
	minLevel              int
	since                 time.Time
}

// active says whether the filter drops anything.
func (f logFilter) active() bool {
	return f.kind != "" || f.name != "" || f.namespace != "" || f.minLevel != minLevelAll || !f.since.IsZero()
}

// keeps says whether e passes the filter.
func (f logFilter) keeps(e *logEntry) bool {
	return (f.kind == "" || e.kind == f.kind) && (f.name == "" || e.name == f.name) &&
		(f.namespace == "" || e.namespace == f.namespace) && e.level >= f.minLevel &&
		(f.since.IsZero() || !e.time.Before(f.since))
}

// logPrinter prints the lines that pass its filter, formatted.
type logPrinter struct {
	w      io.Writer
	filter logFilter
}

// line prints one line of the log: formatted when it is a JSON entry, as
// it is otherwise, unless a filter is set.
func (p *logPrinter) line(raw []byte) error {
	e, ok := parseEntry(raw)
	if !ok {
		if p.filter.active() || len(bytes.TrimSpace(raw)) == 0 {
			return nil
		}
		_, err := fmt.Fprintf(p.w, "%s\n", raw)
		return err
	}
	if !p.filter.keeps(e) {
		return nil
	}
	_, err := io.WriteString(p.w, e.format()+"\n")
	return err
}

// logEntry is one JSON line of the controllers' log, as controller-runtime's
// zap logger writes it.
type logEntry struct {
	time                  time.Time
	level                 int
	kind, namespace, name string
	msg                   string
	// fields are the other keys and their JSON values.
	fields map[string]json.RawMessage
}

// shownApart are the keys that a formatted line shows in its own place, or
// not at all: the controller's names (the kind says it), the reconcile ID,
// and the stack trace of an error (its message says what failed).
var shownApart = []string{"level", "ts", "msg", "controller", "controllerGroup", "controllerKind", "reconcileID", "stacktrace", "caller", "name", "namespace"}

// parseEntry parses a JSON line. The object a line is about is in the keys
// controller-runtime's controllers add: controllerKind, then the kind with
// {name, namespace}, then name and namespace.
func parseEntry(line []byte) (*logEntry, bool) {
	var fields map[string]json.RawMessage
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &fields) != nil {
		return nil, false
	}
	e := &logEntry{fields: fields, msg: jsonString(fields["msg"]), kind: jsonString(fields["controllerKind"]),
		namespace: jsonString(fields["namespace"]), name: jsonString(fields["name"]),
		level: levelOf(jsonString(fields["level"])), time: timeOf(fields["ts"])}
	var ref struct{ Name, Namespace string }
	if raw, ok := fields[e.kind]; e.kind != "" && ok && json.Unmarshal(raw, &ref) == nil && ref.Name != "" {
		e.name, e.namespace = ref.Name, ref.Namespace
		delete(fields, e.kind)
	}
	for _, k := range shownApart {
		delete(fields, k)
	}
	return e, true
}

// format returns the line as `TIME LEVEL Kind ns/name: message key=value...`.
func (e *logEntry) format() string {
	var b strings.Builder
	ts := "-"
	if !e.time.IsZero() {
		ts = e.time.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "%s %-5s ", ts, levelLabel(e.level))
	object := strings.TrimPrefix(e.namespace+"/"+e.name, "/")
	if e.name == "" {
		object = ""
	}
	if object = strings.TrimSpace(e.kind + " " + object); object != "" {
		b.WriteString(object + ": ")
	}
	b.WriteString(strings.ReplaceAll(e.msg, "\n", `\n`))
	keys := make([]string, 0, len(e.fields))
	for k := range e.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		value := string(e.fields[k])
		if strings.HasPrefix(value, `"`) {
			value = quoted(jsonString(e.fields[k]))
		}
		fmt.Fprintf(&b, " %s=%s", quoted(k), value)
	}
	return b.String()
}

// quoted quotes s when it would not read as one word.
func quoted(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return strconv.Quote(s)
	}
	return s
}

// jsonString returns the JSON string raw, or "" when it is not one.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// timeOf parses a zap timestamp: RFC 3339 text, or seconds since the epoch.
func timeOf(raw json.RawMessage) time.Time {
	if s := jsonString(raw); s != "" {
		t, _ := time.Parse(time.RFC3339Nano, s)
		return t
	}
	var seconds float64
	if json.Unmarshal(raw, &seconds) != nil || seconds == 0 {
		return time.Time{}
	}
	whole, frac := math.Modf(seconds)
	return time.Unix(int64(whole), int64(frac*1e9))
}

// zapLevels are zap's levels as its JSON encoder names them; logr's V(n)
// for n > 1 is written "Level(-n)".
var zapLevels = map[string]int{"debug": -1, "info": 0, "warn": 1, "error": 2, "dpanic": 3, "panic": 4, "fatal": 5}

// levelOf returns the zap level of its name.
func levelOf(name string) int {
	if l, ok := zapLevels[name]; ok {
		return l
	}
	var l int
	if _, err := fmt.Sscanf(name, "Level(%d)", &l); err == nil {
		return l
	}
	return 0
}

// levelLabel names a level in a formatted line.
func levelLabel(l int) string {
	for name, level := range zapLevels {
		if level == l {
			return strings.ToUpper(name)
		}
	}
	if l < 0 {
		return "TRACE"
	}
	return "FATAL"
}
