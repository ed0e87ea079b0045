package chart

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/windlass-dev/windlass/internal/workdir"
)

// modTime is the modification time Package writes for every entry, so that
// the same chart always packages to the same bytes.
var modTime = time.Date(1980, time.January, 1, 0, 0, 0, 0, time.UTC)

// valuesFileName is the chart's default values file.
const valuesFileName = "values.yaml"

// Package returns the .tgz package of ch. A non-empty version replaces the
// chart's version (it must be valid SemVer); non-nil values replace the
// chart's values.yaml. ch itself is left unchanged. The package is
// reproducible: every entry gets the same modification time and
// subcharts are written in name order.
func Package(ch *chart.Chart, version string, values map[string]any) ([]byte, error) {
	if ch == nil || ch.Metadata == nil {
		return nil, fmt.Errorf("packaging chart: no chart metadata")
	}
	cp := copyChart(ch)
	if version != "" {
		cp.Metadata.Version = version
	}
	if values != nil {
		data, err := marshalValues(values)
		if err != nil {
			return nil, err
		}
		cp.Values = values
		setRawFile(cp, valuesFileName, data)
	}
	dir, err := workdir.MkdirTemp("windlass-chart-")
	if err != nil {
		return nil, fmt.Errorf("packaging chart: %w", err)
	}
	defer os.RemoveAll(dir)
	name, err := chartutil.Save(cp, dir)
	if err != nil {
		return nil, fmt.Errorf("packaging chart %q: %w", ch.Name(), err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading packaged chart: %w", err)
	}
	return data, nil
}

// marshalValues renders values as values.yaml.
func marshalValues(values map[string]any) ([]byte, error) {
	data, err := yaml.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("encoding values: %w", err)
	}
	return data, nil
}

// copyChart copies the parts of ch that Package changes or that carry a
// modification time, recursively through its subcharts; file contents are
// shared.
func copyChart(ch *chart.Chart) *chart.Chart {
	md := *ch.Metadata
	cp := &chart.Chart{
		Raw:           copyFiles(ch.Raw),
		Metadata:      &md,
		Templates:     copyFiles(ch.Templates),
		Values:        ch.Values,
		Schema:        ch.Schema,
		SchemaModTime: modTime,
		Files:         copyFiles(ch.Files),
		ModTime:       modTime,
	}
	if ch.Lock != nil {
		lock := *ch.Lock
		if lock.Generated.IsZero() {
			lock.Generated = modTime
		}
		cp.Lock = &lock
	}
	deps := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, d := range ch.Dependencies() {
		deps = append(deps, copyChart(d))
	}
	slices.SortStableFunc(deps, func(a, b *chart.Chart) int { return strings.Compare(a.Name(), b.Name()) })
	cp.SetDependencies(deps...)
	return cp
}

// copyFiles copies a file list with every modification time set to modTime.
func copyFiles(files []*common.File) []*common.File {
	if files == nil {
		return nil
	}
	out := make([]*common.File, len(files))
	for i, f := range files {
		out[i] = &common.File{Name: f.Name, ModTime: modTime, Data: f.Data}
	}
	return out
}

// setRawFile replaces (or adds) the raw file name of ch with data.
func setRawFile(ch *chart.Chart, name string, data []byte) {
	for _, f := range ch.Raw {
		if f.Name == name {
			f.Data = data
			return
		}
	}
	ch.Raw = append(ch.Raw, &common.File{Name: name, ModTime: modTime, Data: data})
}

// RevisionVersion returns version with SemVer build metadata naming the
// source revision, for the Revision reconcile strategy:
// "<version>+<first 12 hex digits of the revision's digest>". The digest is
// the part after the last "@" and the last ":" ("main@sha1:<hex>",
// "sha256:<hex>", "v1@sha256:<hex>") or, for a legacy "main/<hex>" revision,
// after the last "/". Existing build metadata of version is replaced. When
// that part is not a hex digest, version is returned unchanged.
func RevisionVersion(version, sourceRevision string) string {
	digest := sourceRevision
	for _, sep := range []string{"@", ":", "/"} {
		if i := strings.LastIndex(digest, sep); i >= 0 {
			digest = digest[i+1:]
		}
	}
	digest = strings.ToLower(digest)
	if digest == "" || strings.Trim(digest, "0123456789abcdef") != "" {
		return version
	}
	if i := strings.IndexByte(version, '+'); i >= 0 {
		version = version[:i]
	}
	return version + "+" + digest[:min(12, len(digest))]
}
