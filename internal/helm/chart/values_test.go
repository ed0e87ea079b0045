package chart

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

func TestMergeValuesFiles(t *testing.T) {
	tree := map[string]string{
		"app/values.yaml":        "a: 0\nfrom: chart\n",
		"app/a.yaml":             "a: 1\nm:\n  p: 1\n  q: 1\nlist: [1, 2]\n",
		"app/b.yaml":             "a: 2\nm:\n  q: 2\nlist: [3]\n",
		"app/multi.yaml":         "a: 1\n---\nb: 2\n",
		"app/bom.yaml":           bom + "bom: true\n",
		"app/bad.yaml":           "a: [\n",
		"app/dir/keep":           "x",
		"values.yaml":            "from: root\n",
		"shared/values.yaml":     "shared: true\n",
		"envs/prod/values.yaml":  "env: prod\n",
		"app/envs/prod/ignored":  "x",
		"app/nested/values.yaml": "nested: true\n",
	}
	tests := []struct {
		name          string
		chartPath     string
		files         []string
		ignoreMissing bool
		extra         map[string]string
		want          map[string]any
		wantErr       string
		wantNotExist  bool
	}{{
		name:  "later files win and maps merge",
		files: []string{"app/a.yaml", "app/b.yaml"},
		want:  map[string]any{"a": 2.0, "m": map[string]any{"p": 1.0, "q": 2.0}, "list": []any{3.0}},
	}, {
		name:  "order matters",
		files: []string{"app/b.yaml", "app/a.yaml"},
		want:  map[string]any{"a": 1.0, "m": map[string]any{"p": 1.0, "q": 1.0}, "list": []any{1.0, 2.0}},
	}, {
		name:      "a path is first tried relative to the root",
		chartPath: "app",
		files:     []string{"values.yaml"},
		want:      map[string]any{"from": "root"},
	}, {
		name:      "then relative to the chart folder",
		chartPath: "app",
		files:     []string{"a.yaml", "nested/values.yaml"},
		want:      map[string]any{"a": 1.0, "m": map[string]any{"p": 1.0, "q": 1.0}, "list": []any{1.0, 2.0}, "nested": true},
	}, {
		name:      "a chart-relative path may climb to a folder inside the root",
		chartPath: "app",
		files:     []string{"../shared/values.yaml"},
		want:      map[string]any{"shared": true},
	}, {
		name:  "multi-document file and BOM",
		files: []string{"app/multi.yaml", "app/bom.yaml"},
		want:  map[string]any{"a": 1.0, "b": 2.0, "bom": true},
	}, {
		name:      "traversal to another app outside the root",
		chartPath: "app",
		files:     []string{"../../other/values.yaml"},
		wantErr:   `values file "../../other/values.yaml" resolves outside the source root`,
	}, {
		name:    "absolute path",
		files:   []string{"ABS"},
		wantErr: "must be a relative path inside the source",
	}, {
		name:          "symlink out of the root is refused even when missing files are ignored",
		files:         []string{"app/a.yaml", "link.yaml"},
		ignoreMissing: true,
		wantErr:       `values file "link.yaml"`,
	}, {
		name:         "missing file",
		chartPath:    "app",
		files:        []string{"a.yaml", "nope.yaml"},
		wantErr:      `values file "nope.yaml" not found`,
		wantNotExist: true,
	}, {
		name:          "missing file ignored",
		chartPath:     "app",
		files:         []string{"nope.yaml", "b.yaml"},
		ignoreMissing: true,
		want:          map[string]any{"a": 2.0, "m": map[string]any{"q": 2.0}, "list": []any{3.0}},
	}, {
		name:          "every file missing keeps the chart's values",
		files:         []string{"nope.yaml"},
		ignoreMissing: true,
		want:          nil,
	}, {
		name: "no files",
		want: nil,
	}, {
		name:    "invalid YAML",
		files:   []string{"app/bad.yaml"},
		wantErr: `parsing values file "app/bad.yaml"`,
	}, {
		name:    "a folder is not a values file",
		files:   []string{"app/dir"},
		wantErr: "not a regular file",
	}, {
		name:    "oversized values file",
		files:   []string{"app/big.yaml"},
		extra:   map[string]string{"app/big.yaml": "a: " + strings.Repeat("x", int(DefaultMaxFileSize)) + "\n"},
		wantErr: "more than the limit",
	}, {
		name:      "chart path outside the root",
		chartPath: "../other",
		files:     []string{"values.yaml"},
		wantErr:   "leads outside the source root",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			base := t.TempDir()
			root := filepath.Join(base, "src")
			writeTree(t, root, tree)
			writeTree(t, root, tt.extra)
			writeTree(t, base, map[string]string{"other/values.yaml": "stolen: true\n"})
			symlink(t, root, "link.yaml", "../other/values.yaml")
			files := make([]string, len(tt.files))
			for i, f := range tt.files {
				files[i] = strings.ReplaceAll(f, "ABS", filepath.Join(root, "app/a.yaml"))
			}
			got, err := MergeValuesFiles(root, tt.chartPath, files, tt.ignoreMissing)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("stolen"))
				g.Expect(errors.Is(err, fs.ErrNotExist)).To(Equal(tt.wantNotExist))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestMergeChartValuesFiles(t *testing.T) {
	packaged, err := LoadArchive(tarGz(t, withEntries(chartEntries("app", "1.0.0"),
		tarEntry{name: "app/values-prod.yaml", body: bom + "replicas: 5\nprod: true\n"},
		tarEntry{name: "app/ci/values.yaml", body: "ci: true\n"})...), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	inMemory := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "mem", Version: "1.0.0"},
		Values:   map[string]any{"replicas": 7},
		Files:    []*common.File{{Name: "extra.yaml", Data: []byte("extra: true\n")}},
	}
	tests := []struct {
		name          string
		ch            *chart.Chart
		files         []string
		ignoreMissing bool
		want          map[string]any
		wantErr       string
	}{{
		name:  "values.yaml then an override from the package",
		ch:    packaged,
		files: []string{"values.yaml", "values-prod.yaml", "./ci/values.yaml"},
		want:  map[string]any{"replicas": 5.0, "prod": true, "ci": true},
	}, {
		name:  "chart built in memory",
		ch:    inMemory,
		files: []string{"values.yaml", "extra.yaml"},
		want:  map[string]any{"replicas": 7.0, "extra": true},
	}, {
		name:    "missing file",
		ch:      packaged,
		files:   []string{"values-dev.yaml"},
		wantErr: `values file "values-dev.yaml" not found in chart "app"`,
	}, {
		name:          "missing file ignored",
		ch:            packaged,
		files:         []string{"values-dev.yaml", "values-prod.yaml"},
		ignoreMissing: true,
		want:          map[string]any{"replicas": 5.0, "prod": true},
	}, {
		name:          "traversal",
		ch:            packaged,
		files:         []string{"../other/values.yaml"},
		ignoreMissing: true,
		wantErr:       "must be a relative path inside the chart",
	}, {
		name:    "absolute path",
		ch:      packaged,
		files:   []string{"/values.yaml"},
		wantErr: "must be a relative path inside the chart",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := MergeChartValuesFiles(tt.ch, tt.files, tt.ignoreMissing)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
