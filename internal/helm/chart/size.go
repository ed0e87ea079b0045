package chart

import (
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// size is what a loaded chart holds: its files and their bytes (as the
// load budget counts them), its charts (itself and its subcharts) and how
// many levels of subcharts it has below it.
type size struct {
	files  int
	bytes  int64
	charts int
	depth  int
}

// measure returns the size of ch and its subcharts. A chart's files under
// charts/<x>/ belong to the subchart x and are counted with it; a
// charts/<x>.tgz is counted in its parent, and its files in the subchart,
// as LoadArchive counts them.
func measure(ch *chart.Chart) size {
	s := size{charts: 1}
	for _, f := range ch.Raw {
		if !inSubchartFolder(f.Name) {
			s.files++
			s.bytes += int64(len(f.Data))
		}
	}
	for _, d := range ch.Dependencies() {
		ds := measure(d)
		s.files += ds.files
		s.bytes += ds.bytes
		s.charts += ds.charts
		s.depth = max(s.depth, ds.depth+1)
	}
	return s
}

// inSubchartFolder tells whether the SDK's loader gives the file name of a
// chart to a subchart vendored as a folder (charts/<x>/…, unless x starts
// with "_" or ".").
func inSubchartFolder(name string) bool {
	rest, ok := strings.CutPrefix(name, "charts/")
	return ok && strings.Contains(rest, "/") && !strings.HasPrefix(rest, "_") && !strings.HasPrefix(rest, ".")
}

// Estimated bytes of memory a loaded chart holds besides the bytes of its
// files, measured by TestMemorySize: per file (its name and the records
// the SDK keeps of it), and for the parsed values per map, map entry, list
// item and text value (interfaces, map buckets, allocator rounding).
const (
	fileOverhead  = 320
	mapOverhead   = 272
	entryOverhead = 40
	itemOverhead  = 16
	valueOverhead = 16
)

// MemorySize estimates the bytes ch, with its subcharts, holds in memory
// once loaded: the bytes of its files as the limits count them, plus a
// measured overhead per file and per parsed value.
func MemorySize(ch *chart.Chart) int64 {
	s := measure(ch)
	return s.bytes + int64(s.files)*fileOverhead + parsedValuesSize(ch)
}

// parsedValuesSize estimates what the parsed values of ch and of its
// subcharts hold.
func parsedValuesSize(ch *chart.Chart) int64 {
	n := valueSize(map[string]any(ch.Values))
	for _, d := range ch.Dependencies() {
		n += parsedValuesSize(d)
	}
	return n
}

// valueSize estimates what one parsed value holds.
func valueSize(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		n := int64(mapOverhead)
		for k, e := range v {
			n += entryOverhead + int64(len(k)) + valueSize(e)
		}
		return n
	case []any:
		n := int64(itemOverhead * len(v))
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	case string:
		return valueOverhead + int64(len(v))
	}
	return valueOverhead
}
