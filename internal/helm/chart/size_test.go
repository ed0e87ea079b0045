package chart

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The size of a loaded chart is what loading it charged: its files,
// those of its subcharts once, and a vendored package both packed and
// unpacked.
func TestMeasure(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, chartFiles("app", "app", "1.0.0"))
	writeTree(t, root, chartFiles("app/charts/sub", "sub", "1.0.0"))
	pkg := tarGz(t, chartEntries("pkg", "1.0.0")...)
	writeTree(t, root, map[string]string{"app/charts/pkg-1.0.0.tgz": string(pkg), "app/charts/_ignored/x": "xx"})
	b := newBudget(Limits{})
	r, err := os.OpenRoot(root)
	g.Expect(err).NotTo(HaveOccurred())
	defer r.Close()
	files, err := readDir(r, "app", b)
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := loadFiles(files)
	g.Expect(err).NotTo(HaveOccurred())
	s := measure(ch)
	g.Expect(s).To(Equal(size{files: b.files, bytes: b.bytes, charts: 3, depth: 1}))
}

// TestMemorySize measures what loaded charts hold on the heap, against
// MemorySize: one whose values dominate, one of many templates, and one
// with a vendored package (counted packed and unpacked). The estimate is
// within a fifth (0.99 to 1.16 when measured), while the package is a
// hundredth of what the chart holds.
func TestMemorySize(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"values", generatedChart(t, 300, 5)},
		{"templates", generatedChart(t, 20, 60)},
		{"vendored package", tarGz(t, withEntries(chartEntries("app", "1.0.0"),
			tarEntry{name: "app/charts/sub-1.0.0.tgz", body: string(generatedChart(t, 50, 10))})...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			const copies = 10
			kept := make([]any, copies)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			var estimate int64
			for i := range kept {
				ch, err := LoadArchive(tt.data, Limits{})
				g.Expect(err).NotTo(HaveOccurred())
				kept[i], estimate = ch, MemorySize(ch)
			}
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(kept)
			held := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / copies
			t.Logf("package %d B, held %d B, estimate %d B", len(tt.data), held, estimate)
			g.Expect(float64(estimate) / float64(held)).To(BeNumerically("~", 1.1, 0.3))
		})
	}
}

// generatedChart returns the package of a chart with values for
// components and templates files, written as large charts write them.
func generatedChart(t *testing.T, components, templates int) []byte {
	var values strings.Builder
	for i := range components {
		fmt.Fprintf(&values, `component%d:
  enabled: true
  image: {registry: docker.io, repository: org/component%d, tag: 1.2.%d-debian-12-r0, pullPolicy: IfNotPresent}
  resources:
    requests: {cpu: 100m, memory: 128Mi}
  nodeSelector: {}
  tolerations: []
`, i, i, i)
	}
	entries := []tarEntry{{name: "app/Chart.yaml", body: chartYAML("app", "1.0.0")}, {name: "app/values.yaml", body: values.String()},
		{name: "app/README.md", body: strings.Repeat("A line of documentation.\n", 300)}}
	for i := range templates {
		entries = append(entries, tarEntry{name: fmt.Sprintf("app/templates/t%d.yaml", i),
			body: strings.Repeat("{{- if .Values.component0.enabled }}\nkind: ConfigMap\n{{- end }}\n", 40)})
	}
	return tarGz(t, entries...)
}
