package chart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// resolver carries what one ResolveDependencies call shares: the source
// root, the budget of the whole chart tree and the sources read so far.
type resolver struct {
	root  *os.Root
	fetch Fetcher
	// budget counts the files and bytes of the tree; its limits are those
	// of the call, defaults applied.
	budget *budget
	// charts counts the charts of the tree, remotes the downloads.
	charts, remotes int
	// sources are the dependencies read so far, by source.
	sources map[string]*source
}

// newResolver returns a resolver with an empty budget for l.
func newResolver(root *os.Root, l Limits, fetch Fetcher) *resolver {
	return &resolver{root: root, fetch: fetch, budget: newBudget(l), sources: map[string]*source{}}
}

// node is a place in the chart tree: the path of subcharts from the top
// chart ("app/charts/lib") and how many levels below the top it is.
type node struct {
	path  string
	depth int
}

// child returns the place of the dependency name of the chart at n.
func (n node) child(name string) node {
	return node{path: n.path + "/charts/" + name, depth: n.depth + 1}
}

// source is one dependency's source, read and checked once: its files and
// what one inclusion of it costs.
type source struct {
	files []*archive.BufferedFile
	size  size
	// folder is the chart folder inside the root whose file://
	// dependencies are resolved for each inclusion; empty for a package.
	folder string
}

// addCharts counts n more charts at at, with below levels of subcharts
// under it, or says which limit that breaks.
func (r *resolver) addCharts(at node, n, below int) error {
	l := r.budget.limits
	r.charts += n
	if r.charts > l.MaxCharts {
		return &LimitError{Limit: LimitCharts, Max: int64(l.MaxCharts), Chart: at.path}
	}
	if at.depth+below > l.MaxDepth {
		return &LimitError{Limit: LimitDepth, Max: int64(l.MaxDepth), Chart: at.path}
	}
	return nil
}

// charge charges the tree for the chart of size s at at: its files and
// bytes, and its subcharts (the chart itself is counted by addCharts
// before it is read).
func (r *resolver) charge(at node, s size) error {
	r.budget.chart = at.path
	if err := r.budget.charge(s.files, s.bytes); err != nil {
		return err
	}
	return r.addCharts(at, s.charts-1, s.depth)
}

// source returns the source of dep, a dependency of the chart folder dir,
// at at. A source read before is returned alone: the caller charges the
// tree and builds a chart from its files. A new one is read against a copy
// of the tree's budget, so that reading stops as soon as the tree would go
// past a limit; it is returned with its chart, built and charged, for this
// first inclusion.
func (r *resolver) source(ctx context.Context, dir string, dep *chart.Dependency, at node) (*source, *chart.Chart, error) {
	loc, err := r.locate(dir, dep)
	if err != nil {
		return nil, nil, err
	}
	if src, ok := r.sources[loc.key]; ok {
		return src, nil, nil
	}
	b := *r.budget
	b.chart = at.path
	files, err := r.read(ctx, dep, loc, &b, at)
	if err != nil {
		return nil, nil, err
	}
	sub, err := loadFiles(files)
	if err != nil {
		return nil, nil, fmt.Errorf("dependency %q: %w", dep.Name, err)
	}
	src := &source{files: files, size: measure(sub), folder: loc.folder}
	if err := r.charge(at, src.size); err != nil {
		return nil, nil, err
	}
	r.sources[loc.key] = src
	return src, sub, nil
}

// location says where a dependency comes from: a chart folder or a
// package file inside the root, or a download. key names the source.
type location struct {
	key, folder, file string
}

// locate finds the source of dep, a dependency of the chart folder dir.
func (r *resolver) locate(dir string, dep *chart.Dependency) (location, error) {
	repo := dep.Repository
	switch {
	case strings.HasPrefix(repo, "file://"):
		return r.locateLocal(dir, dep)
	case repo == "":
		return location{}, fmt.Errorf("dependency %q has no repository and is not vendored in charts/", dep.Name)
	case r.fetch == nil:
		return location{}, &RemoteDependencyError{Name: dep.Name, Version: dep.Version, Repository: redactURL(repo)}
	}
	return location{key: "remote\x00" + repo + "\x00" + dep.Name + "\x00" + dep.Version}, nil
}

// locateLocal finds the folder or package file of a file:// dependency of
// the chart folder dir, which must be inside the root.
func (r *resolver) locateLocal(dir string, dep *chart.Dependency) (location, error) {
	rel := strings.TrimPrefix(dep.Repository, "file://")
	if rel == "" || path.IsAbs(rel) {
		return location{}, fmt.Errorf("dependency %q: repository %q must be a relative file:// path", dep.Name, dep.Repository)
	}
	p, err := localPath(path.Join(dir, rel))
	if err != nil {
		return location{}, fmt.Errorf("dependency %q: repository %q: %w", dep.Name, dep.Repository, err)
	}
	fi, err := r.root.Stat(p)
	if err != nil {
		return location{}, fmt.Errorf("dependency %q: repository %q inside the source root: %w", dep.Name, dep.Repository, err)
	}
	if fi.IsDir() {
		return location{key: "folder\x00" + p, folder: p}, nil
	}
	return location{key: "file\x00" + p, file: p}, nil
}

// read reads and checks the files of the dependency dep, at at in the
// tree, from loc, charging b: a folder, a package file, or a download,
// counted against MaxRemoteDependencies.
func (r *resolver) read(ctx context.Context, dep *chart.Dependency, loc location, b *budget, at node) ([]*archive.BufferedFile, error) {
	switch {
	case loc.folder != "":
		files, err := readDir(r.root, loc.folder, b)
		return files, dependencyError(dep.Name, err)
	case loc.file != "":
		data, err := readRootFile(r.root, loc.file, b.limits.MaxChartSize)
		if err != nil {
			return nil, dependencyError(dep.Name, err)
		}
		files, err := readArchive(data, b, 0)
		return files, dependencyError(dep.Name, err)
	}
	r.remotes++
	if limit := b.limits.MaxRemoteDependencies; r.remotes > limit {
		return nil, &LimitError{Limit: LimitRemoteDependencies, Max: int64(limit), Chart: at.path}
	}
	repo := redactURL(dep.Repository)
	data, err := r.fetch(ctx, dep.Repository, dep.Name, dep.Version)
	if err != nil {
		return nil, fmt.Errorf("fetching dependency %q from %q: %w", dep.Name, repo, err)
	}
	files, err := readArchive(data, b, 0)
	if err != nil {
		return nil, limitOr(err, fmt.Errorf("dependency %q from %q: %w", dep.Name, repo, err))
	}
	return files, nil
}

// dependencyError names the dependency in err, unless err is nil or a
// limit of the tree, which names its chart itself.
func dependencyError(name string, err error) error {
	if err == nil {
		return nil
	}
	return limitOr(err, fmt.Errorf("dependency %q: %w", name, err))
}

// limitOr returns the LimitError of the tree in err, if any, else
// wrapped.
func limitOr(err, wrapped error) error {
	var le *LimitError
	if errors.As(err, &le) && le.Chart != "" {
		return le
	}
	return wrapped
}
