package chart

import (
	"archive/tar"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

func TestLoadArchive(t *testing.T) {
	valid := chartEntries("app", "1.2.3")
	nestedGood := tarGz(t, chartEntries("sub", "0.1.0")...)
	nestedLink := tarGz(t, withEntries(chartEntries("sub", "0.1.0"),
		tarEntry{name: "sub/templates/x.yaml", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"})...)
	zeros := strings.Repeat("\x00", 1<<20)

	tests := []struct {
		name    string
		data    []byte
		limits  Limits
		wantErr string
		check   func(g Gomega, ch *chart.Chart)
	}{{
		name: "valid package",
		data: tarGz(t, valid...),
		check: func(g Gomega, ch *chart.Chart) {
			g.Expect(ch.Name()).To(Equal("app"))
			g.Expect(ch.Metadata.Version).To(Equal("1.2.3"))
			g.Expect(ch.Values).To(HaveKeyWithValue("replicas", BeNumerically("==", 1)))
			g.Expect(ch.Templates).To(HaveLen(1))
		},
	}, {
		name: "BOM trimmed from Chart.yaml, values.yaml and a template",
		data: tarGz(t,
			tarEntry{name: "app/Chart.yaml", body: bom + chartYAML("app", "1.0.0")},
			tarEntry{name: "app/values.yaml", body: bom + "replicas: 3\n"},
			tarEntry{name: "app/templates/cm.yaml", body: bom + "kind: ConfigMap\n"}),
		check: func(g Gomega, ch *chart.Chart) {
			g.Expect(ch.Name()).To(Equal("app"))
			g.Expect(ch.Values).To(HaveKeyWithValue("replicas", BeNumerically("==", 3)))
			g.Expect(string(ch.Templates[0].Data)).To(Equal("kind: ConfigMap\n"))
		},
	}, {
		name:  "vendored subchart package is loaded",
		data:  tarGz(t, withEntries(valid, tarEntry{name: "app/charts/sub-0.1.0.tgz", body: string(nestedGood)})...),
		check: func(g Gomega, ch *chart.Chart) { g.Expect(ch.Dependencies()[0].Name()).To(Equal("sub")) },
	}, {
		name:    "parent folder in a name",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "app/../../etc/cron.d/x", body: "x"})...),
		wantErr: "refers to a parent folder",
	}, {
		name:    "absolute name",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "/etc/passwd", body: "x"})...),
		wantErr: "absolute name",
	}, {
		name:    "backslash in a name",
		data:    tarGz(t, withEntries(valid, tarEntry{name: `app\..\..\x`, body: "x"})...),
		wantErr: "backslash",
	}, {
		name:    "drive letter",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "c:/x", body: "x"})...),
		wantErr: "drive letter",
	}, {
		name:    "symlink entry",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "app/templates/s.yaml", typeflag: tar.TypeSymlink, linkname: "../../etc/passwd"})...),
		wantErr: "is a link",
	}, {
		name:    "hardlink entry",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "app/templates/h.yaml", typeflag: tar.TypeLink, linkname: "app/values.yaml"})...),
		wantErr: "is a link",
	}, {
		name:    "device entry",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "app/dev", typeflag: tar.TypeChar})...),
		wantErr: "unsupported type",
	}, {
		name:    "Chart.yaml outside a chart folder",
		data:    tarGz(t, tarEntry{name: "Chart.yaml", body: chartYAML("app", "1.0.0")}),
		wantErr: "not inside the chart's folder",
	}, {
		name:    "duplicate entry",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "app/values.yaml", body: "replicas: 9\n"})...),
		wantErr: "appears twice",
	}, {
		name:    "file over the file size limit",
		data:    tarGz(t, valid...),
		limits:  Limits{MaxFileSize: 10},
		wantErr: "more than the limit of 10",
	}, {
		name:    "more files than allowed",
		data:    tarGz(t, valid...),
		limits:  Limits{MaxFiles: 2},
		wantErr: "more than 2 files",
	}, {
		name:    "decompression bomb over the total size",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "app/files/a", body: zeros}, tarEntry{name: "app/files/b", body: zeros})...),
		limits:  Limits{MaxTotalSize: 3 << 19},
		wantErr: "add up to more than",
	}, {
		name:    "compressed package over the size limit",
		data:    tarGz(t, valid...),
		limits:  Limits{MaxChartSize: 64},
		wantErr: "more than the limit of 64",
	}, {
		name:    "symlink inside a vendored subchart package",
		data:    tarGz(t, withEntries(valid, tarEntry{name: "app/charts/sub-0.1.0.tgz", body: string(nestedLink)})...),
		wantErr: `subchart archive "charts/sub-0.1.0.tgz"`,
	}, {
		name:    "not gzip",
		data:    []byte("kind: ConfigMap\n"),
		wantErr: "gzip",
	}, {
		name:    "no files",
		data:    tarGz(t, tarEntry{name: "app/", typeflag: tar.TypeDir}),
		wantErr: "no files",
	}, {
		name:    "invalid Chart.yaml",
		data:    tarGz(t, tarEntry{name: "app/Chart.yaml", body: "name: [\n"}),
		wantErr: "Chart.yaml",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch, err := LoadArchive(tt.data, tt.limits)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(ch).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, ch)
		})
	}
}

func TestLoadArchiveNestingDepth(t *testing.T) {
	g := NewWithT(t)
	data := tarGz(t, chartEntries("c0", "1.0.0")...)
	for i := 1; i <= DefaultMaxDepth; i++ {
		name := "c" + string(rune('0'+i%10))
		data = tarGz(t, withEntries(chartEntries(name, "1.0.0"), tarEntry{name: name + "/charts/sub.tgz", body: string(data)})...)
	}
	_, err := LoadArchive(data, Limits{})
	g.Expect(err).To(MatchError(ContainSubstring("nested more than")))
}

func TestEntryName(t *testing.T) {
	tests := []struct {
		raw, want, wantErr string
	}{
		{raw: "app/Chart.yaml", want: "Chart.yaml"},
		{raw: "app/templates/./cm.yaml", want: "templates/cm.yaml"},
		{raw: "app/charts/sub/Chart.yaml", want: "charts/sub/Chart.yaml"},
		{raw: "", wantErr: "empty name"},
		{raw: "app/..", wantErr: "parent folder"},
		{raw: "app/a/../../b", wantErr: "parent folder"},
		{raw: "/app/Chart.yaml", wantErr: "absolute"},
		{raw: `app\Chart.yaml`, wantErr: "backslash"},
		{raw: "C:/app/Chart.yaml", wantErr: "drive letter"},
		{raw: "Chart.yaml", wantErr: "not inside"},
		{raw: "app/", wantErr: "not inside"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			g := NewWithT(t)
			got, err := entryName(tt.raw)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestIsSubchartArchive(t *testing.T) {
	tests := map[string]bool{
		"charts/sub-1.0.0.tgz":          true,
		"charts/a/charts/b.tgz":         true,
		"charts/_skip/charts/b.tgz":     false,
		"charts/.hidden/charts/b.tgz":   false,
		"charts/sub.tar":                false,
		"files/charts/x.tgz":            false,
		"charts/a/x.tgz":                false,
		"charts/a/templates/charts.tgz": false,
		"x.tgz":                         false,
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(isSubchartArchive(name)).To(Equal(want))
		})
	}
}
