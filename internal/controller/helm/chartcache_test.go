package helm

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	hchart "helm.sh/helm/v4/pkg/chart/v2"

	chartload "github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// loadedChart returns a chart loaded from its package, as readChart loads
// it, with a file of size bytes.
func loadedChart(t *testing.T, size int) *hchart.Chart {
	t.Helper()
	data := helmtest.Archive(t, helmtest.Chart(t, "app", "1.0.0", helmtest.WithFile("files/blob", []byte(strings.Repeat("x", size)))))
	ch, err := chartload.LoadArchive(data, chartload.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// security-2 risk 4: the loaded charts are bounded in bytes (MemorySize)
// besides their number: past the budget the least recently used go, and
// a chart larger than the whole budget is not kept.
func TestLoadedChartsBoundInBytes(t *testing.T) {
	small, large := loadedChart(t, 1<<10), loadedChart(t, 64<<10)
	smallSize, largeSize := chartload.MemorySize(small), chartload.MemorySize(large)
	budget := 3*smallSize + smallSize/2
	tests := []struct {
		name      string
		maxBytes  int64
		puts      []*hchart.Chart // kept under "0", "1", …
		wantKept  []bool
		wantBytes int64
	}{
		{name: "within the budget", maxBytes: budget, puts: []*hchart.Chart{small, small, small},
			wantKept: []bool{true, true, true}, wantBytes: 3 * smallSize},
		{name: "past it: the least recently used goes", maxBytes: budget, puts: []*hchart.Chart{small, small, small, small},
			wantKept: []bool{false, true, true, true}, wantBytes: 3 * smallSize},
		{name: "one larger than the budget is not kept", maxBytes: budget, puts: []*hchart.Chart{small, large},
			wantKept: []bool{true, false}, wantBytes: smallSize},
		{name: "a large one evicts several", maxBytes: largeSize + smallSize, puts: []*hchart.Chart{small, small, large},
			wantKept: []bool{false, true, true}, wantBytes: smallSize + largeSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(largeSize).To(BeNumerically(">", budget))
			var c loadedCharts
			c.init(tt.maxBytes)
			for i, ch := range tt.puts {
				c.put(fmt.Sprint(i), ch)
			}
			for i, want := range tt.wantKept {
				g.Expect(c.get(fmt.Sprint(i)) != nil).To(Equal(want), "chart %d", i)
			}
			g.Expect(c.bytes()).To(Equal(tt.wantBytes))
		})
	}
}

// A chart too large for the cache is still loaded and used: loadChart
// reads it again next time.
func TestLoadedChartsOversizedIsNotKept(t *testing.T) {
	g := NewWithT(t)
	var c loadedCharts
	g.Expect(c.put("early", loadedChart(t, 10))).To(BeFalse(), "nothing is kept before init")
	ch := loadedChart(t, 64<<10)
	c.init(chartload.MemorySize(ch) - 1)
	g.Expect(c.put("big", ch)).To(BeFalse())
	g.Expect(c.get("big")).To(BeNil())
	g.Expect(c.bytes()).To(BeZero())
}
