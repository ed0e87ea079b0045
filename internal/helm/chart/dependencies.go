package chart

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Fetcher downloads the chart package name, in a version matching
// versionRange (a SemVer constraint, "" for any), from the chart repository
// repoURL as written in Chart.yaml (http(s)://, oci:// or a repository alias
// such as "@stable"). The HelmChart controller wires it to its repository
// client.
type Fetcher func(ctx context.Context, repoURL, name, versionRange string) ([]byte, error)

// RemoteDependencyError reports a dependency that lives in a chart
// repository, is not vendored in charts/, and could not be fetched because no
// Fetcher was given.
type RemoteDependencyError struct {
	// Name is the dependency's chart name.
	Name string
	// Version is its version constraint from Chart.yaml.
	Version string
	// Repository is its repository, without credentials or query.
	Repository string
}

// Error implements error.
func (e *RemoteDependencyError) Error() string {
	return fmt.Sprintf("dependency %q (version %q) from repository %q is not vendored in charts/ and cannot be fetched",
		e.Name, e.Version, e.Repository)
}

// ResolveDependencies completes ch, loaded from the folder chartPath inside
// root, with the dependencies its Chart.yaml declares and charts/ lacks.
// A dependency already present (vendored in charts/) is kept as it is. One
// whose repository is "file://<path>" is loaded from <path>, relative to the
// chart folder, which must resolve inside root (a folder with LoadDir, with
// its own file:// dependencies resolved in turn, or a package file). Any
// other repository is fetched with fetch; when fetch is nil the result is a
// *RemoteDependencyError. Every dependency must carry the declared name and
// a version that satisfies the declared constraint.
func ResolveDependencies(ctx context.Context, root, chartPath string, ch *chart.Chart, l Limits, fetch Fetcher) error {
	dir, err := localPath(chartPath)
	if err != nil {
		return fmt.Errorf("chart path: %w", err)
	}
	res := &resolver{root: root, limits: l.withDefaults(), fetch: fetch}
	return res.resolve(ctx, dir, ch, 0)
}

// resolver carries what one ResolveDependencies call shares.
type resolver struct {
	root   string
	limits Limits
	fetch  Fetcher
}

// resolve adds the missing dependencies of ch, loaded from dir; depth counts
// the file:// hops from the top chart.
func (r *resolver) resolve(ctx context.Context, dir string, ch *chart.Chart, depth int) error {
	if ch == nil || ch.Metadata == nil {
		return fmt.Errorf("resolving dependencies: no chart metadata")
	}
	if depth >= maxDepth {
		return fmt.Errorf("file:// dependencies of chart %q nest more than %d levels deep", ch.Name(), maxDepth)
	}
	for _, dep := range ch.Metadata.Dependencies {
		if dep == nil || hasDependency(ch, dep.Name) {
			continue
		}
		sub, err := r.load(ctx, dir, dep, depth)
		if err != nil {
			return err
		}
		if err := checkDependency(dep, sub); err != nil {
			return err
		}
		ch.AddDependency(sub)
	}
	return nil
}

// load loads the chart of one missing dependency.
func (r *resolver) load(ctx context.Context, dir string, dep *chart.Dependency, depth int) (*chart.Chart, error) {
	repo := dep.Repository
	switch {
	case strings.HasPrefix(repo, "file://"):
		return r.loadLocal(ctx, dir, dep, depth)
	case repo == "":
		return nil, fmt.Errorf("dependency %q has no repository and is not vendored in charts/", dep.Name)
	case r.fetch == nil:
		return nil, &RemoteDependencyError{Name: dep.Name, Version: dep.Version, Repository: redactURL(repo)}
	}
	data, err := r.fetch(ctx, repo, dep.Name, dep.Version)
	if err != nil {
		return nil, fmt.Errorf("fetching dependency %q from %q: %w", dep.Name, redactURL(repo), err)
	}
	sub, err := LoadArchive(data, r.limits)
	if err != nil {
		return nil, fmt.Errorf("dependency %q from %q: %w", dep.Name, redactURL(repo), err)
	}
	return sub, nil
}

// loadLocal loads a file:// dependency of the chart in dir.
func (r *resolver) loadLocal(ctx context.Context, dir string, dep *chart.Dependency, depth int) (*chart.Chart, error) {
	rel := strings.TrimPrefix(dep.Repository, "file://")
	if rel == "" || path.IsAbs(rel) {
		return nil, fmt.Errorf("dependency %q: repository %q must be a relative file:// path", dep.Name, dep.Repository)
	}
	p, err := localPath(path.Join(dir, rel))
	if err != nil {
		return nil, fmt.Errorf("dependency %q: repository %q: %w", dep.Name, dep.Repository, err)
	}
	root, err := os.OpenRoot(r.root)
	if err != nil {
		return nil, fmt.Errorf("opening source root: %w", err)
	}
	defer root.Close()
	fi, err := root.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("dependency %q: repository %q inside the source root: %w", dep.Name, dep.Repository, err)
	}
	if !fi.IsDir() {
		data, err := readRootFile(root, p, r.limits.MaxChartSize)
		if err != nil {
			return nil, fmt.Errorf("dependency %q: %w", dep.Name, err)
		}
		return LoadArchive(data, r.limits)
	}
	sub, err := LoadDir(r.root, p, r.limits)
	if err != nil {
		return nil, fmt.Errorf("dependency %q: %w", dep.Name, err)
	}
	if err := r.resolve(ctx, p, sub, depth+1); err != nil {
		return nil, fmt.Errorf("dependency %q: %w", dep.Name, err)
	}
	return sub, nil
}

// hasDependency tells whether ch already holds a subchart called name.
func hasDependency(ch *chart.Chart, name string) bool {
	for _, d := range ch.Dependencies() {
		if d.Name() == name {
			return true
		}
	}
	return false
}

// checkDependency checks that sub is the chart dep asks for.
func checkDependency(dep *chart.Dependency, sub *chart.Chart) error {
	if sub.Name() != dep.Name {
		return fmt.Errorf("dependency %q resolved to a chart named %q", dep.Name, sub.Name())
	}
	if dep.Version == "" {
		return nil
	}
	c, err := semver.NewConstraint(dep.Version)
	if err != nil {
		return fmt.Errorf("dependency %q: invalid version constraint %q: %w", dep.Name, dep.Version, err)
	}
	v, err := semver.NewVersion(sub.Metadata.Version)
	if err != nil {
		return fmt.Errorf("dependency %q: invalid chart version %q: %w", dep.Name, sub.Metadata.Version, err)
	}
	if !c.Check(v) {
		return fmt.Errorf("dependency %q: version %s does not satisfy %q", dep.Name, v, dep.Version)
	}
	return nil
}

// redactURL drops credentials, query and fragment from a repository URL for
// error texts; text that is not a URL is returned as is.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i]
		}
		if i := strings.LastIndex(raw, "@"); i >= 0 && strings.Contains(raw[:i], "://") {
			raw = raw[:strings.Index(raw, "://")+3] + raw[i+1:]
		}
		return raw
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	return u.String()
}
