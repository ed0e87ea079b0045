package chart

import "fmt"

// Default limits, used where a Limits field is zero.
const (
	// DefaultMaxChartSize is the largest compressed chart package accepted.
	DefaultMaxChartSize int64 = 10 << 20
	// DefaultMaxTotalSize is the largest sum of uncompressed file sizes of
	// one chart, nested subchart archives included.
	DefaultMaxTotalSize int64 = 50 << 20
	// DefaultMaxFileSize is the largest single (uncompressed) file accepted,
	// and the largest values file MergeValuesFiles reads.
	DefaultMaxFileSize int64 = 5 << 20
	// DefaultMaxFiles is the largest number of files in one chart, nested
	// subchart archives included.
	DefaultMaxFiles = 10000
)

// maxDepth bounds the nesting of subchart archives and of file://
// dependencies, so that a self-referencing chart ends in an error.
const maxDepth = 10

// Limits bounds what one chart may cost to load. A zero field means its
// default.
type Limits struct {
	// MaxChartSize caps the compressed bytes of a chart package (LoadArchive)
	// and of each nested subchart archive.
	MaxChartSize int64
	// MaxTotalSize caps the sum of the uncompressed sizes of all files of a
	// chart, counting the files inside nested subchart archives too.
	MaxTotalSize int64
	// MaxFileSize caps the uncompressed size of any single file.
	MaxFileSize int64
	// MaxFiles caps the number of files, nested subchart archives included.
	MaxFiles int
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxChartSize <= 0 {
		l.MaxChartSize = DefaultMaxChartSize
	}
	if l.MaxTotalSize <= 0 {
		l.MaxTotalSize = DefaultMaxTotalSize
	}
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// budget counts the files and bytes one load has taken so far.
type budget struct {
	limits Limits
	files  int
	bytes  int64
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
	b.files++
	if b.files > b.limits.MaxFiles {
		return fmt.Errorf("chart has more than %d files", b.limits.MaxFiles)
	}
	b.bytes += size
	if b.bytes > b.limits.MaxTotalSize {
		return fmt.Errorf("chart files add up to more than %d bytes", b.limits.MaxTotalSize)
	}
	return nil
}
