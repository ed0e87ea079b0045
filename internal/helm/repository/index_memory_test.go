package repository

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestIndexMemorySize measures what parsed indexes of the shape of
// Bitnami's hold on the heap, against MemorySize: the estimate is within
// a fifth (a little above, rather than below), and about twice the
// normalised (stored) index. The raw YAML, with the fields parsing
// drops, is about three times what parsing keeps.
func TestIndexMemorySize(t *testing.T) {
	for _, shape := range []struct{ charts, versions int }{{30, 40}, {300, 4}, {3, 400}} {
		t.Run(fmt.Sprintf("%d charts of %d versions", shape.charts, shape.versions), func(t *testing.T) {
			g := NewWithT(t)
			raw := bitnamiLikeIndex(shape.charts, shape.versions)
			idx, err := ParseIndex(raw)
			g.Expect(err).NotTo(HaveOccurred())
			normalised, err := Normalise(idx)
			g.Expect(err).NotTo(HaveOccurred())

			held := heldByParsing(t, normalised)
			estimate := idx.MemorySize()
			t.Logf("raw %d B, normalised %d B, held %d B (%.2f × normalised), estimate %d B",
				len(raw), len(normalised), held, float64(held)/float64(len(normalised)), estimate)
			g.Expect(float64(estimate) / float64(held)).To(BeNumerically("~", 1.05, 0.25))
			g.Expect(float64(held) / float64(len(normalised))).To(BeNumerically("~", 1.8, 0.4))
		})
	}
}

// heldByParsing returns the heap bytes one parsed copy of data holds,
// averaged over a few copies kept alive together.
func heldByParsing(t *testing.T, data []byte) int64 {
	t.Helper()
	const copies = 4
	kept := make([]*Index, copies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		idx, err := ParseIndex(append([]byte(nil), data...))
		if err != nil {
			t.Fatal(err)
		}
		kept[i] = idx
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / copies
}

// bitnamiLikeIndex returns an index.yaml of charts × versions entries with
// the fields, and about the sizes, of those of the Bitnami repository.
func bitnamiLikeIndex(charts, versions int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	for c := range charts {
		name := fmt.Sprintf("chart-%03d-%s", c, strings.Repeat("x", c%12))
		fmt.Fprintf(&b, "  %s:\n", name)
		for v := range versions {
			version := fmt.Sprintf("%d.%d.%d", v/20+1, v%20, c%7)
			fmt.Fprintf(&b, `  - annotations:
      category: Infrastructure
      licenses: Apache-2.0
    apiVersion: v2
    appVersion: %d.%d.%d
    created: "2024-01-1%dT10:21:%02d.123456789Z"
    dependencies:
    - name: common
      repository: oci://registry-1.docker.io/bitnamicharts
      tags: [bitnami-common]
      version: 2.x.x
    description: %[6]s deploys an application with sensible defaults for production use on Kubernetes.
    digest: %064[7]x
    home: https://bitnami.com
    icon: https://bitnami.com/assets/stacks/%[6]s/img/%[6]s-stack-220x234.png
    keywords: [%[6]s, database, cache]
    maintainers:
    - name: Broadcom, Inc. All Rights Reserved.
      url: https://github.com/bitnami/charts
    name: %[6]s
    sources:
    - https://github.com/bitnami/charts/tree/main/bitnami/%[6]s
    urls:
    - https://charts.bitnami.com/bitnami/%[6]s-%[8]s.tgz
    version: %[8]s
`, v/10, v%10, c, v%9, v%60, name, c*1000+v, version)
		}
	}
	return []byte(b.String())
}
