package chart

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// dagFiles returns the chart folders of a dependency DAG: app on top,
// then levels of width charts each (l<level>c<i>, folders of the same
// name), where every chart depends on every chart of the next level
// through file://. The charts of the bottom level each hold a file of
// bottom bytes. The tree has 1 + width + width² + … charts.
func dagFiles(levels, width, bottom int) map[string]string {
	files := map[string]string{}
	deps := func(level int) []string {
		if level > levels {
			return nil
		}
		var out []string
		for i := range width {
			name := fmt.Sprintf("l%dc%d", level, i)
			out = append(out, name+"||file://../"+name)
		}
		return out
	}
	maps.Copy(files, chartFiles("app", "app", "1.0.0", deps(1)...))
	for level := 1; level <= levels; level++ {
		for i := range width {
			name := fmt.Sprintf("l%dc%d", level, i)
			maps.Copy(files, chartFiles(name, name, "1.0.0", deps(level+1)...))
			if level == levels && bottom > 0 {
				files[name+"/files/blob"] = strings.Repeat("x", bottom)
			}
		}
	}
	return files
}

// loadAndResolve loads the chart folder app of root and resolves its
// dependencies under l.
func loadAndResolve(root string, l Limits, fetch Fetcher) (*chart.Chart, error) {
	ch, err := LoadDir(root, "app", l)
	if err != nil {
		return nil, err
	}
	return ch, ResolveDependencies(context.Background(), root, "app", ch, l, fetch)
}

// security-2 risk 4: 19 small charts in a 9-level file:// DAG, each
// depending on both charts of the next level, make a tree of 1023 charts;
// the bottom level's 2 × 256 KiB appear 512 times, 128 MiB. The build
// fails on the chart count (or on the total size) quickly, having
// allocated a small part of that.
func TestResolveDependenciesRefusesTheDAGBomb(t *testing.T) {
	tests := []struct {
		name      string
		limits    Limits
		wantLimit string
	}{
		{name: "default limits: the chart count", wantLimit: LimitCharts},
		{name: "1 MiB in all, as in the review", limits: Limits{MaxTotalSize: 1 << 20}, wantLimit: LimitTotalSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeTree(t, root, dagFiles(9, 2, 256<<10))

			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := loadAndResolve(root, tt.limits, nil)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)

			var le *LimitError
			g.Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
			g.Expect(le.Limit).To(Equal(tt.wantLimit))
			g.Expect(le.Chart).To(HavePrefix("app/charts/l1c0/charts/l2c0/"))
			g.Expect(err.Error()).To(ContainSubstring("chart tree limit " + tt.wantLimit))
			g.Expect(elapsed).To(BeNumerically("<", 10*time.Second))
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s after %s, %d KiB allocated", err, elapsed, allocated>>10)
			g.Expect(allocated).To(BeNumerically("<", 16<<20), "far below the 128 MiB the tree needs")
		})
	}
}

// A normal umbrella chart builds: 40 subcharts, each with the same
// file:// library, and one remote dependency twice. Every inclusion is a
// chart of its own, so that the SDK may change one without the others.
func TestResolveDependenciesUmbrella(t *testing.T) {
	g := NewWithT(t)
	repo := newChartRepo(t, map[string][]byte{"remote-1.0.0.tgz": tarGz(t, chartEntries("remote", "1.0.0")...)})
	root := t.TempDir()
	var deps []string
	for i := range 40 {
		name := fmt.Sprintf("svc%02d", i)
		deps = append(deps, name+"|^1.0.0|file://../services/"+name)
		writeTree(t, root, chartFiles("services/"+name, name, "1.0.0", "common|~0.3|file://../../common", "remote|1.x|"+repo.url))
	}
	writeTree(t, root, chartFiles("app", "app", "1.0.0", deps...))
	writeTree(t, root, chartFiles("common", "common", "0.3.1"))

	ch, err := loadAndResolve(root, Limits{}, repo.fetch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Dependencies()).To(HaveLen(40))
	g.Expect(repo.calls).To(HaveLen(1), "one download for every inclusion")
	commons := map[*chart.Chart]bool{}
	for _, svc := range ch.Dependencies() {
		g.Expect(depNames(svc)).To(ConsistOf("common@0.3.1", "remote@1.0.0"))
		g.Expect(svc.Parent()).To(BeIdenticalTo(ch))
		for _, d := range svc.Dependencies() {
			g.Expect(d.Parent()).To(BeIdenticalTo(svc))
			commons[d] = true
		}
	}
	g.Expect(commons).To(HaveLen(80), "no chart is shared between parents")
	g.Expect(measure(ch).charts).To(Equal(121))
}

// Each limit of the tree, passed by a little and met exactly.
func TestResolveDependenciesLimits(t *testing.T) {
	shared := chartFiles("app", "app", "1.0.0", "a||file://../a", "b||file://../b")
	maps.Copy(shared, chartFiles("a", "a", "1.0.0", "shared||file://../shared"))
	maps.Copy(shared, chartFiles("b", "b", "1.0.0", "shared||file://../shared"))
	maps.Copy(shared, chartFiles("shared", "shared", "1.0.0"))
	shared["shared/files/blob"] = strings.Repeat("x", 1000)
	sharedBytes := treeSize(t, shared).bytes
	repo := newChartRepo(t, map[string][]byte{
		"r1-1.0.0.tgz": tarGz(t, chartEntries("r1", "1.0.0")...),
		"r2-1.0.0.tgz": tarGz(t, chartEntries("r2", "1.0.0")...),
	})
	tests := []struct {
		name      string
		files     map[string]string
		limits    Limits
		wantLimit string
		wantChart string
	}{{
		name:      "charts: 1 + 2 + 4 past 6",
		files:     dagFiles(2, 2, 0),
		limits:    Limits{MaxCharts: 6},
		wantLimit: LimitCharts,
		wantChart: "app/charts/l1c1/charts/l2c1",
	}, {
		name:   "charts: 1 + 2 + 4 within 7",
		files:  dagFiles(2, 2, 0),
		limits: Limits{MaxCharts: 7},
	}, {
		name:      "depth: 4 levels past 3",
		files:     dagFiles(4, 1, 0),
		limits:    Limits{MaxDepth: 3},
		wantLimit: LimitDepth,
		wantChart: "app/charts/l1c0/charts/l2c0/charts/l3c0/charts/l4c0",
	}, {
		name:   "depth: 4 levels within 4",
		files:  dagFiles(4, 1, 0),
		limits: Limits{MaxDepth: 4},
	}, {
		name:      "bytes: the second inclusion of a shared chart",
		files:     shared,
		limits:    Limits{MaxTotalSize: sharedBytes - 1},
		wantLimit: LimitTotalSize,
		wantChart: "app/charts/b/charts/shared",
	}, {
		name:   "bytes: exactly the limit",
		files:  shared,
		limits: Limits{MaxTotalSize: sharedBytes},
	}, {
		name:      "files: past the limit",
		files:     dagFiles(1, 2, 0),
		limits:    Limits{MaxFiles: 11},
		wantLimit: LimitFiles,
		wantChart: "app/charts/l1c1",
	}, {
		name:      "remote dependencies: two different past one",
		files:     chartFiles("app", "app", "1.0.0", "r1||"+repo.url, "r2||"+repo.url),
		limits:    Limits{MaxRemoteDependencies: 1},
		wantLimit: LimitRemoteDependencies,
		wantChart: "app/charts/r2",
	}, {
		name: "remote dependencies: one, included twice, within one",
		files: func() map[string]string {
			files := chartFiles("app", "app", "1.0.0", "a||file://../a", "b||file://../b")
			maps.Copy(files, chartFiles("a", "a", "1.0.0", "r1||"+repo.url))
			maps.Copy(files, chartFiles("b", "b", "1.0.0", "r1||"+repo.url))
			return files
		}(),
		limits: Limits{MaxRemoteDependencies: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeTree(t, root, tt.files)
			_, err := loadAndResolve(root, tt.limits, repo.fetch)
			if tt.wantLimit == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var le *LimitError
			g.Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
			g.Expect(*le).To(Equal(LimitError{Limit: tt.wantLimit, Max: limitOf(tt.limits, tt.wantLimit), Chart: tt.wantChart}))
		})
	}
}

// treeSize resolves the chart folder app of files, with default limits,
// and measures it.
func treeSize(t *testing.T, files map[string]string) size {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, files)
	ch, err := loadAndResolve(root, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return measure(ch)
}

// limitOf returns the value of the limit name in l.
func limitOf(l Limits, name string) int64 {
	return map[string]int64{
		LimitTotalSize: l.MaxTotalSize, LimitFiles: int64(l.MaxFiles), LimitCharts: int64(l.MaxCharts),
		LimitDepth: int64(l.MaxDepth), LimitRemoteDependencies: int64(l.MaxRemoteDependencies),
	}[name]
}

// A chart that is over a limit on its own keeps the message of LoadDir;
// in a tree, the message names the limit and the chart.
func TestLimitErrorMessages(t *testing.T) {
	tests := map[string]struct {
		err  LimitError
		want string
	}{
		"alone":  {LimitError{Limit: LimitTotalSize, Max: 10}, "chart files add up to more than 10 bytes"},
		"files":  {LimitError{Limit: LimitFiles, Max: 3}, "chart has more than 3 files"},
		"charts": {LimitError{Limit: LimitCharts, Max: 256, Chart: "app/charts/a"}, `chart tree limit MaxCharts: at "app/charts/a", the chart and its dependencies hold more than 256 charts (a dependency counts each time it is included)`},
		"depth":  {LimitError{Limit: LimitDepth, Max: 10, Chart: "app/charts/a"}, `chart tree limit MaxDepth: at "app/charts/a", the chart and its dependencies nest more than 10 levels deep`},
		"remote": {LimitError{Limit: LimitRemoteDependencies, Max: 64, Chart: "app/charts/r"}, `chart tree limit MaxRemoteDependencies: at "app/charts/r", the chart and its dependencies download more than 64 different remote dependencies`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(tt.err.Error()).To(Equal(tt.want))
		})
	}
}
