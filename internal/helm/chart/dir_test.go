package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// fileNames lists the names of files.
func fileNames(files []*common.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func TestLoadDir(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, root, outside string)
		chartPath string
		limits    Limits
		wantErr   string
		check     func(g Gomega, ch *chart.Chart)
	}{{
		name:      "plain chart with .helmignore",
		chartPath: "charts/app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("charts/app", "app", "1.0.0"))
			writeTree(t, root, map[string]string{
				"charts/app/.helmignore":       "secret.txt\nskip/\n",
				"charts/app/secret.txt":        "x",
				"charts/app/skip/a.txt":        "x",
				"charts/app/files/keep.txt":    "keep",
				"charts/app/templates/.hidden": "x",
			})
		},
		check: func(g Gomega, ch *chart.Chart) {
			g.Expect(ch.Name()).To(Equal("app"))
			g.Expect(fileNames(ch.Files)).To(ConsistOf(".helmignore", "files/keep.txt"))
			g.Expect(fileNames(ch.Templates)).To(ConsistOf("templates/cm.yaml", "templates/NOTES.txt"))
		},
	}, {
		name:      "chart at the root",
		chartPath: "",
		setup:     func(t *testing.T, root, _ string) { writeTree(t, root, chartFiles(".", "app", "1.0.0")) },
		check:     func(g Gomega, ch *chart.Chart) { g.Expect(ch.Name()).To(Equal("app")) },
	}, {
		name:      "symlinks to a file and a folder inside the root are followed",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			writeTree(t, root, map[string]string{"shared/_helpers.tpl": "{{/* h */}}", "shared/lib/x.yaml": "kind: X\n"})
			symlink(t, root, "app/templates/_helpers.tpl", "../../shared/_helpers.tpl")
			symlink(t, root, "app/templates/lib", "../../shared/lib")
		},
		check: func(g Gomega, ch *chart.Chart) {
			g.Expect(fileNames(ch.Templates)).To(ContainElements("templates/_helpers.tpl", "templates/lib/x.yaml"))
		},
	}, {
		name:      "symlink to a file outside the root",
		chartPath: "app",
		setup: func(t *testing.T, root, outside string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			symlink(t, root, "app/templates/leak.yaml", filepath.Join(outside, "secret.yaml"))
		},
		wantErr: `symbolic link "templates/leak.yaml" does not resolve inside the source root`,
	}, {
		name:      "relative symlink climbing out of the root",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			symlink(t, root, "app/files/leak", "../../../outside/secret.yaml")
		},
		wantErr: `symbolic link "files/leak" does not resolve inside the source root`,
	}, {
		name:      "absolute symlink into the root is refused",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			writeTree(t, root, map[string]string{"shared/x.yaml": "x"})
			symlink(t, root, "app/files/x.yaml", filepath.Join(root, "shared/x.yaml"))
		},
		wantErr: `symbolic link "files/x.yaml"`,
	}, {
		name:      "dangling symlink",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			symlink(t, root, "app/files/gone", "nothing-here")
		},
		wantErr: `symbolic link "files/gone"`,
	}, {
		name:      "symlink loop to a parent folder",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			symlink(t, root, "app/files/loop", "..")
		},
		wantErr: "loops back",
	}, {
		name:      ".helmignore symlinked outside the root",
		chartPath: "app",
		setup: func(t *testing.T, root, outside string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			symlink(t, root, "app/.helmignore", filepath.Join(outside, "secret.yaml"))
		},
		wantErr: "reading .helmignore",
	}, {
		name:      "an ignored symlink out of the root is skipped, never read",
		chartPath: "app",
		setup: func(t *testing.T, root, outside string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			writeTree(t, root, map[string]string{"app/.helmignore": "leak\n"})
			symlink(t, root, "app/leak", filepath.Join(outside, "secret.yaml"))
		},
		check: func(g Gomega, ch *chart.Chart) { g.Expect(fileNames(ch.Files)).To(Equal([]string{".helmignore"})) },
	}, {
		name:      "BOM trimmed from Chart.yaml, values.yaml and a template",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, map[string]string{
				"app/Chart.yaml":        bom + chartYAML("app", "1.0.0"),
				"app/values.yaml":       bom + "replicas: 2\n",
				"app/templates/cm.yaml": bom + "kind: ConfigMap\n",
			})
		},
		check: func(g Gomega, ch *chart.Chart) {
			g.Expect(ch.Name()).To(Equal("app"))
			g.Expect(ch.Values).To(HaveKeyWithValue("replicas", BeNumerically("==", 2)))
			g.Expect(string(ch.Templates[0].Data)).To(Equal("kind: ConfigMap\n"))
		},
	}, {
		name:      "oversized file",
		chartPath: "app",
		limits:    Limits{MaxFileSize: 100},
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			writeTree(t, root, map[string]string{"app/files/big": strings.Repeat("x", 101)})
		},
		wantErr: `"files/big" is 101 bytes, more than the limit of 100`,
	}, {
		name:      "too many files",
		chartPath: "app",
		limits:    Limits{MaxFiles: 3},
		setup:     func(t *testing.T, root, _ string) { writeTree(t, root, chartFiles("app", "app", "1.0.0")) },
		wantErr:   "more than 3 files",
	}, {
		name:      "total size over the limit",
		chartPath: "app",
		limits:    Limits{MaxTotalSize: 1000},
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			writeTree(t, root, map[string]string{"app/files/a": strings.Repeat("x", 600), "app/files/b": strings.Repeat("x", 600)})
		},
		wantErr: "add up to more than 1000",
	}, {
		name:      "chart path climbing out of the root",
		chartPath: "../outside",
		setup:     func(t *testing.T, root, _ string) {},
		wantErr:   "leads outside the source root",
	}, {
		name:      "absolute chart path",
		chartPath: "/etc",
		setup:     func(t *testing.T, root, _ string) {},
		wantErr:   "is absolute",
	}, {
		name:      "chart path through a symlink out of the root",
		chartPath: "link",
		setup: func(t *testing.T, root, outside string) {
			writeTree(t, outside, chartFiles("app", "app", "1.0.0"))
			symlink(t, root, "link", filepath.Join(outside, "app"))
		},
		wantErr: `chart folder "link" inside the source root`,
	}, {
		name:      "chart path through a symlink inside the root",
		chartPath: "link",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("real/app", "app", "1.0.0"))
			symlink(t, root, "link", "real/app")
		},
		check: func(g Gomega, ch *chart.Chart) { g.Expect(ch.Name()).To(Equal("app")) },
	}, {
		name:      "chart path is a file",
		chartPath: "app/Chart.yaml",
		setup:     func(t *testing.T, root, _ string) { writeTree(t, root, chartFiles("app", "app", "1.0.0")) },
		wantErr:   "is not a folder",
	}, {
		name:      "missing Chart.yaml",
		chartPath: "app",
		setup:     func(t *testing.T, root, _ string) { writeTree(t, root, map[string]string{"app/values.yaml": "a: 1\n"}) },
		wantErr:   "Chart.yaml file is missing",
	}, {
		name:      "vendored subchart package with a symlink entry",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			bad := tarGz(t, withEntries(chartEntries("sub", "0.1.0"),
				tarEntry{name: "sub/templates/s.yaml", typeflag: '2', linkname: "/etc/passwd"})...)
			writeTree(t, root, map[string]string{"app/charts/sub-0.1.0.tgz": string(bad)})
		},
		wantErr: "is a link",
	}, {
		name:      "vendored subchart folder and package",
		chartPath: "app",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0"))
			writeTree(t, root, chartFiles("app/charts/dir", "dir", "0.1.0"))
			writeTree(t, root, map[string]string{"app/charts/pkg-0.1.0.tgz": string(tarGz(t, chartEntries("pkg", "0.1.0")...))})
		},
		check: func(g Gomega, ch *chart.Chart) {
			var names []string
			for _, d := range ch.Dependencies() {
				names = append(names, d.Name())
			}
			g.Expect(names).To(ConsistOf("dir", "pkg"))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			base := t.TempDir()
			root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
			g.Expect(os.MkdirAll(root, 0o755)).To(Succeed())
			writeTree(t, outside, map[string]string{"secret.yaml": "password: hunter2\n"})
			tt.setup(t, root, outside)
			ch, err := LoadDir(root, tt.chartPath, tt.limits)
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

func TestLocalPath(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{in: "", want: "."},
		{in: ".", want: "."},
		{in: "./charts/app/", want: "charts/app"},
		{in: "a/../b", want: "b"},
		{in: "a/../..", wantErr: "outside"},
		{in: "../x", wantErr: "outside"},
		{in: "/abs", wantErr: "absolute"},
		{in: `\abs`, wantErr: "absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := localPath(tt.in)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
