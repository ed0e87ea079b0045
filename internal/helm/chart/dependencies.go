package chart

import (
	"context"
	"fmt"
	"net/url"
	"os"
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
//
// The whole tree shares one budget (l with defaults): ch and every
// dependency, each counted every time it is included, may hold at most
// MaxTotalSize bytes in MaxFiles files and MaxCharts charts nested at most
// MaxDepth levels deep, and at most MaxRemoteDependencies different
// dependencies are downloaded. Going past one fails with a *LimitError
// that names the limit and the chart that went past it, while loading. A
// source (folder, package or download) is read once; each inclusion gets a
// chart of its own built from the same checked files, because the Helm SDK
// changes charts while it renders them (their dependencies, by their
// conditions and tags, and their parent).
func ResolveDependencies(ctx context.Context, root, chartPath string, ch *chart.Chart, l Limits, fetch Fetcher) error {
	dir, err := localPath(chartPath)
	if err != nil {
		return fmt.Errorf("chart path: %w", err)
	}
	if ch == nil || ch.Metadata == nil {
		return fmt.Errorf("resolving dependencies: no chart metadata")
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("opening source root: %w", err)
	}
	defer r.Close()
	res := newResolver(r, l, fetch)
	top := node{path: ch.Name()}
	if err := res.addCharts(top, 1, 0); err != nil {
		return err
	}
	if err := res.charge(top, measure(ch)); err != nil {
		return err
	}
	return res.resolve(ctx, dir, ch, top)
}

// resolve adds the missing dependencies of ch, loaded from dir and placed
// at at in the tree.
func (r *resolver) resolve(ctx context.Context, dir string, ch *chart.Chart, at node) error {
	for _, dep := range ch.Metadata.Dependencies {
		if dep == nil || hasDependency(ch, dep.Name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sub, err := r.include(ctx, dir, dep, at.child(dep.Name))
		if err != nil {
			return err
		}
		ch.AddDependency(sub)
	}
	return nil
}

// include returns a chart of its own for one inclusion of dep at at: the
// tree is charged for it (while its files are read, the first time), the
// chart is checked against dep, and its file:// dependencies are resolved.
func (r *resolver) include(ctx context.Context, dir string, dep *chart.Dependency, at node) (*chart.Chart, error) {
	if err := r.addCharts(at, 1, 0); err != nil {
		return nil, err
	}
	src, sub, err := r.source(ctx, dir, dep, at)
	if err != nil {
		return nil, err
	}
	if sub == nil {
		if err := r.charge(at, src.size); err != nil {
			return nil, err
		}
		if sub, err = loadFiles(src.files); err != nil {
			return nil, fmt.Errorf("dependency %q: %w", dep.Name, err)
		}
	}
	if err := checkDependency(dep, sub); err != nil {
		return nil, err
	}
	if src.folder != "" {
		if err := r.resolve(ctx, src.folder, sub, at); err != nil {
			return nil, err
		}
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
