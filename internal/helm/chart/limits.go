package chart

import "fmt"

// Default limits, used where a Limits field is zero.
const (
	// DefaultMaxChartSize is the largest compressed chart package accepted.
	DefaultMaxChartSize int64 = 10 << 20
	// DefaultMaxTotalSize is the largest sum of uncompressed file sizes of
	// one chart, nested subchart archives and resolved dependencies
	// included.
	DefaultMaxTotalSize int64 = 50 << 20
	// DefaultMaxFileSize is the largest single (uncompressed) file accepted,
	// and the largest values file MergeValuesFiles reads.
	DefaultMaxFileSize int64 = 5 << 20
	// DefaultMaxFiles is the largest number of files in one chart, nested
	// subchart archives and resolved dependencies included.
	DefaultMaxFiles = 10000
	// DefaultMaxCharts is the largest number of charts in one chart tree:
	// the chart, its subcharts and its dependencies, each counted every
	// time it appears. Large umbrella charts hold a few tens.
	DefaultMaxCharts = 256
	// DefaultMaxDepth is the deepest nesting of subcharts and dependencies
	// below a chart, so that a self-referencing chart ends in an error.
	DefaultMaxDepth = 10
	// DefaultMaxRemoteDependencies is the largest number of dependencies
	// ResolveDependencies downloads for one chart.
	DefaultMaxRemoteDependencies = 64
)

// Names of the limits, as LimitError.Limit gives them.
const (
	LimitTotalSize          = "MaxTotalSize"
	LimitFiles              = "MaxFiles"
	LimitCharts             = "MaxCharts"
	LimitDepth              = "MaxDepth"
	LimitRemoteDependencies = "MaxRemoteDependencies"
)

// Limits bounds what one chart may cost to load. A zero field means its
// default. LoadDir and LoadArchive apply them to one chart (its vendored
// subcharts included); ResolveDependencies applies MaxTotalSize,
// MaxFiles, MaxCharts and MaxDepth to the whole tree: the chart with every
// dependency, each counted every time it is included.
type Limits struct {
	// MaxChartSize caps the compressed bytes of a chart package (LoadArchive)
	// and of each nested subchart archive or downloaded dependency.
	MaxChartSize int64
	// MaxTotalSize caps the sum of the uncompressed sizes of all files of a
	// chart, counting the files inside nested subchart archives and of its
	// dependencies too.
	MaxTotalSize int64
	// MaxFileSize caps the uncompressed size of any single file.
	MaxFileSize int64
	// MaxFiles caps the number of files, nested subchart archives and
	// dependencies included.
	MaxFiles int
	// MaxCharts caps the number of charts in a chart tree.
	MaxCharts int
	// MaxDepth caps the nesting of subcharts and dependencies.
	MaxDepth int
	// MaxRemoteDependencies caps the dependencies downloaded for one chart.
	MaxRemoteDependencies int
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	l.MaxChartSize = orDefault(l.MaxChartSize, DefaultMaxChartSize)
	l.MaxTotalSize = orDefault(l.MaxTotalSize, DefaultMaxTotalSize)
	l.MaxFileSize = orDefault(l.MaxFileSize, DefaultMaxFileSize)
	l.MaxFiles = orDefault(l.MaxFiles, DefaultMaxFiles)
	l.MaxCharts = orDefault(l.MaxCharts, DefaultMaxCharts)
	l.MaxDepth = orDefault(l.MaxDepth, DefaultMaxDepth)
	l.MaxRemoteDependencies = orDefault(l.MaxRemoteDependencies, DefaultMaxRemoteDependencies)
	return l
}

// orDefault returns v, or def when v is zero or less.
func orDefault[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// LimitError reports a chart, or a chart with its dependencies, that goes
// past one of its Limits.
type LimitError struct {
	// Limit names the limit: LimitTotalSize, LimitFiles, LimitCharts,
	// LimitDepth or LimitRemoteDependencies.
	Limit string
	// Max is the limit's value.
	Max int64
	// Chart is where in the chart tree the limit was passed, as a path of
	// subcharts from the top chart ("app/charts/lib"); empty when one chart
	// is loaded on its own.
	Chart string
}

// Error implements error.
func (e *LimitError) Error() string {
	if e.Chart == "" {
		switch e.Limit {
		case LimitTotalSize:
			return fmt.Sprintf("chart files add up to more than %d bytes", e.Max)
		case LimitFiles:
			return fmt.Sprintf("chart has more than %d files", e.Max)
		}
	}
	const counted = " (a dependency counts each time it is included)"
	var what string
	switch e.Limit {
	case LimitTotalSize:
		what = fmt.Sprintf("hold more than %d bytes of files", e.Max) + counted
	case LimitFiles:
		what = fmt.Sprintf("hold more than %d files", e.Max) + counted
	case LimitCharts:
		what = fmt.Sprintf("hold more than %d charts", e.Max) + counted
	case LimitDepth:
		what = fmt.Sprintf("nest more than %d levels deep", e.Max)
	default:
		what = fmt.Sprintf("download more than %d different remote dependencies", e.Max)
	}
	return fmt.Sprintf("chart tree limit %s: at %q, the chart and its dependencies %s", e.Limit, e.Chart, what)
}

// budget counts the files and bytes one load, or one chart tree, has taken
// so far.
type budget struct {
	limits Limits
	files  int
	bytes  int64
	// chart is the path of the chart being loaded in a chart tree, for
	// LimitError; empty for a chart loaded on its own.
	chart string
}

// newBudget returns an empty budget for l (defaults applied).
func newBudget(l Limits) *budget {
	return &budget{limits: l.withDefaults()}
}

// take charges one file of size bytes named name, or says which limit it
// breaks.
func (b *budget) take(name string, size int64) error {
	if size > b.limits.MaxFileSize {
		return fmt.Errorf("chart file %q is %d bytes, more than the limit of %d", name, size, b.limits.MaxFileSize)
	}
	return b.charge(1, size)
}

// charge adds files and bytes, or says which limit they break.
func (b *budget) charge(files int, bytes int64) error {
	b.files += files
	if b.files > b.limits.MaxFiles {
		return &LimitError{Limit: LimitFiles, Max: int64(b.limits.MaxFiles), Chart: b.chart}
	}
	b.bytes += bytes
	if b.bytes > b.limits.MaxTotalSize {
		return &LimitError{Limit: LimitTotalSize, Max: b.limits.MaxTotalSize, Chart: b.chart}
	}
	return nil
}
