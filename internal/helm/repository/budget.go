package repository

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultParseMaxMemory is the memory that all the index parses in progress
// in the process may use together by default: one index of the largest
// size FetchIndex takes by default, parsed from YAML.
const DefaultParseMaxMemory = 512 << 20

// Parsing an index takes far more memory than the index holds: a YAML
// index about yamlParseFactor times its size at its peak (measured: 9
// times, for an index of 40 MiB shaped as Bitnami's), a JSON one (a
// normalised index) about jsonParseFactor times.
const (
	yamlParseFactor = 10
	jsonParseFactor = 2
)

// parseBudget is the process's memory budget for index parses.
type parseBudget struct {
	max  int64
	sema *semaphore.Weighted
}

var parses atomic.Pointer[parseBudget]

func init() { SetParseMaxMemory(0) }

// SetParseMaxMemory sets the memory that all the index parses in progress
// in the process may use together; zero or less restores
// DefaultParseMaxMemory. Parses in progress keep what they hold; call it
// before the first parse.
func SetParseMaxMemory(n int64) {
	if n <= 0 {
		n = DefaultParseMaxMemory
	}
	parses.Store(&parseBudget{max: n, sema: semaphore.NewWeighted(n)})
}

// ParseCost returns the memory that parsing data as an index takes at its
// peak, estimated.
func ParseCost(data []byte) int64 {
	if json.Valid(data) {
		return int64(len(data)) * jsonParseFactor
	}
	return int64(len(data)) * yamlParseFactor
}

// ParseIndexBounded parses data as ParseIndex does, once the process's
// parse budget (SetParseMaxMemory) has room for it: parses of large
// indexes take turns instead of holding more memory together than the
// budget, and one that alone would need more than the whole budget fails
// at once. It returns ctx's error if ctx ends while it waits.
func ParseIndexBounded(ctx context.Context, data []byte) (*Index, error) {
	budget := parses.Load()
	cost := ParseCost(data)
	if cost > budget.max {
		return nil, fmt.Errorf("the index (%s) would take about %s of memory to parse, more than the %s that index parses may use (--helm-index-parse-max-memory)",
			mebibytes(int64(len(data))), mebibytes(cost), mebibytes(budget.max))
	}
	if err := budget.sema.Acquire(ctx, cost); err != nil {
		return nil, fmt.Errorf("waiting for memory to parse the index: %w", err)
	}
	defer budget.sema.Release(cost)
	return ParseIndex(data)
}

// mebibytes writes n in MiB, to a tenth.
func mebibytes(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
