package chart

import (
	"archive/tar"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// FuzzLoadArchive feeds arbitrary bytes to LoadArchive as a chart package,
// under small fuzzed limits (zero meaning the default). It asserts that a
// chart it loads stays within the budget: the files and bytes of the chart
// and its subcharts at most MaxFiles and MaxTotalSize, no file over
// MaxFileSize, the package at most MaxChartSize.
func FuzzLoadArchive(f *testing.F) {
	valid := tarGz(f, chartEntries("app", "1.2.3")...)
	nested := tarGz(f, withEntries(chartEntries("app", "1.0.0"),
		tarEntry{name: "app/charts/sub-0.1.0.tgz", body: string(tarGz(f, chartEntries("sub", "0.1.0")...))})...)
	folderSub := tarGz(f, withEntries(chartEntries("app", "1.0.0"),
		tarEntry{name: "app/charts/sub/Chart.yaml", body: chartYAML("sub", "0.1.0")},
		tarEntry{name: "app/charts/sub/values.yaml", body: bom + "a: b\n"},
		tarEntry{name: "app/charts/_skip/x", body: "x"})...)
	f.Add(valid, uint16(0), uint8(0), uint16(0))
	f.Add(valid, uint16(40), uint8(0), uint16(0))
	f.Add(valid, uint16(0), uint8(2), uint16(0))
	f.Add(valid, uint16(0), uint8(0), uint16(10))
	f.Add(nested, uint16(0), uint8(0), uint16(0))
	f.Add(nested, uint16(300), uint8(5), uint16(200))
	f.Add(folderSub, uint16(0), uint8(0), uint16(0))
	f.Add(tarGz(f, tarEntry{name: "app/Chart.yaml", body: "name: [\n"}), uint16(0), uint8(0), uint16(0))
	f.Add(tarGz(f, withEntries(chartEntries("app", "1.0.0"),
		tarEntry{name: "app/templates/s.yaml", typeflag: tar.TypeSymlink, linkname: "../../etc/passwd"})...), uint16(0), uint8(0), uint16(0))
	f.Add([]byte("kind: ConfigMap\n"), uint16(0), uint8(0), uint16(0))
	f.Add([]byte{0x1f, 0x8b, 0x08}, uint16(0), uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, maxTotal uint16, maxFiles uint8, maxFile uint16) {
		l := Limits{MaxTotalSize: int64(maxTotal), MaxFiles: int(maxFiles), MaxFileSize: int64(maxFile)}
		ch, err := LoadArchive(data, l)
		if err != nil {
			if ch != nil {
				t.Fatalf("LoadArchive returned a chart with the error %v", err)
			}
			return
		}
		checkBudget(t, ch, l.withDefaults(), len(data))
	})
}

// FuzzLoadArchiveFiles builds a valid chart package from fuzzed
// Chart.yaml, values.yaml and template contents (optionally vendored again
// as a subchart package), and loads it under a fuzzed total size limit. It
// asserts the budget as FuzzLoadArchive does, and that a loaded chart has
// a name and version and its template as written (less a leading BOM),
// and its subchart when one was packed.
func FuzzLoadArchiveFiles(f *testing.F) {
	f.Add(chartYAML("app", "1.2.3"), "replicas: 1\n", "kind: ConfigMap\n", false, uint16(0))
	f.Add(chartYAML("app", "1.2.3"), "replicas: 1\n", "kind: ConfigMap\n", true, uint16(0))
	f.Add(bom+chartYAML("app", "1.0.0"), bom+"replicas: 3\n", bom+"kind: ConfigMap\n", true, uint16(0))
	f.Add(chartYAML("app", "1.0.0", "dep|1.x|https://charts.example.com"), "a:\n  b: [1, 2]\n---\nc: d\n",
		"{{ .Values.a.b }}", false, uint16(0))
	f.Add("apiVersion: v2\nname: app\nversion: 1.0.0\ntype: library\n", "", "", true, uint16(64))
	f.Add("apiVersion: v2\nname: ../x\nversion: 1.0.0\n", "", "", false, uint16(0))
	f.Add("apiVersion: v2\nname: app\nversion: not-semver\n", "", "", false, uint16(0))
	f.Add("name: [\n", "a: [\n", "{{", true, uint16(0))
	f.Add(chartYAML("app", "1.0.0"), strings.Repeat("k: v\n", 200), "x", true, uint16(500))
	f.Fuzz(func(t *testing.T, chartYAMLText, values, template string, withSub bool, maxTotal uint16) {
		files := func(dir string) []tarEntry {
			return []tarEntry{
				{name: dir + "/Chart.yaml", body: chartYAMLText},
				{name: dir + "/values.yaml", body: values},
				{name: dir + "/templates/t.yaml", body: template},
			}
		}
		entries := files("app")
		if withSub {
			entries = append(entries, tarEntry{name: "app/charts/sub-0.1.0.tgz", body: string(tarGz(t, files("sub")...))})
		}
		data := tarGz(t, entries...)
		l := Limits{MaxTotalSize: int64(maxTotal)}
		ch, err := LoadArchive(data, l)
		if err != nil {
			return
		}
		checkBudget(t, ch, l.withDefaults(), len(data))
		charts := []*chart.Chart{ch}
		if withSub {
			if len(ch.Dependencies()) != 1 {
				t.Fatalf("the chart has %d subcharts, want the one packed", len(ch.Dependencies()))
			}
			charts = append(charts, ch.Dependencies()[0])
		}
		want := strings.TrimPrefix(template, bom)
		for _, c := range charts {
			if c.Metadata == nil || c.Name() == "" || c.Metadata.Version == "" {
				t.Fatalf("a loaded chart has no name or version: %+v", c.Metadata)
			}
			var got *string
			for _, tf := range c.Templates {
				if tf.Name == "templates/t.yaml" {
					s := string(tf.Data)
					got = &s
				}
			}
			if got == nil || *got != want {
				t.Fatalf("chart %s: template templates/t.yaml is %v, want %q", c.Name(), got, want)
			}
		}
	})
}

// checkBudget fails t when the loaded chart ch, read from a package of
// size bytes, holds more than the limits l (defaults applied) allow.
func checkBudget(t *testing.T, ch *chart.Chart, l Limits, size int) {
	t.Helper()
	if ch == nil {
		t.Fatal("LoadArchive returned no chart and no error")
	}
	if int64(size) > l.MaxChartSize {
		t.Fatalf("loaded a package of %d bytes, over MaxChartSize %d", size, l.MaxChartSize)
	}
	s := measure(ch)
	if s.files > l.MaxFiles {
		t.Fatalf("loaded %d files, over MaxFiles %d", s.files, l.MaxFiles)
	}
	if s.bytes > l.MaxTotalSize {
		t.Fatalf("loaded %d bytes of files, over MaxTotalSize %d", s.bytes, l.MaxTotalSize)
	}
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		for _, f := range c.Raw {
			if int64(len(f.Data)) > l.MaxFileSize {
				t.Fatalf("loaded file %q of %d bytes, over MaxFileSize %d", f.Name, len(f.Data), l.MaxFileSize)
			}
		}
		for _, d := range c.Dependencies() {
			walk(d)
		}
	}
	walk(ch)
	if m := MemorySize(ch); m < s.bytes {
		t.Fatalf("MemorySize %d is less than the %d bytes of files", m, s.bytes)
	}
}
