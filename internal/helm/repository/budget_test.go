package repository

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestParseIndexBounded: index parses share the process's budget: a parse
// that does not fit beside those in progress waits for its turn (here
// until its context ends), one that fits parses, and one that alone
// needs more than the budget fails at once, naming the flag. A JSON index
// costs less than a YAML one of the same size.
func TestParseIndexBounded(t *testing.T) {
	g := NewWithT(t)
	defer SetParseMaxMemory(0)
	yamlIndex := []byte("apiVersion: v1\nentries:\n  app:\n  - version: 1.0.0\n    urls: [app-1.0.0.tgz]\n" +
		"# " + strings.Repeat("x", 10<<10) + "\n")
	jsonIndex := []byte(fmt.Sprintf(`{"apiVersion":"v1","entries":{"app":[{"version":"1.0.0","urls":["app-1.0.0.tgz"]}]},"pad":%q}`,
		strings.Repeat("x", 10<<10)))
	g.Expect(ParseCost(yamlIndex)).To(BeNumerically(">", 4*ParseCost(jsonIndex)))

	SetParseMaxMemory(ParseCost(yamlIndex) + 1)
	idx, err := ParseIndexBounded(context.Background(), yamlIndex)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(idx.Entries).To(HaveKey("app"))

	// Half the budget is in use: the YAML index waits, the JSON one fits.
	budget := parses.Load()
	g.Expect(budget.sema.TryAcquire(budget.max / 2)).To(BeTrue())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ParseIndexBounded(ctx, yamlIndex)
	g.Expect(err).To(MatchError(ContainSubstring("waiting for memory to parse the index")))
	_, err = ParseIndexBounded(context.Background(), jsonIndex)
	g.Expect(err).NotTo(HaveOccurred())
	budget.sema.Release(budget.max / 2)
	_, err = ParseIndexBounded(context.Background(), yamlIndex)
	g.Expect(err).NotTo(HaveOccurred(), "its turn came")

	SetParseMaxMemory(ParseCost(yamlIndex) - 1)
	_, err = ParseIndexBounded(context.Background(), yamlIndex)
	g.Expect(err).To(MatchError(And(ContainSubstring("would take about 0.1 MiB of memory to parse, more than the 0.1 MiB that index parses may use"),
		ContainSubstring("--helm-index-parse-max-memory"))))
}
