package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// MergeValuesFiles reads the values files of a folder chart and deep-merges
// them in order: a later file wins, maps are merged key by key. Each path is
// first tried relative to root (the source's extracted artifact), then
// relative to the chart folder chartPath; either way it must resolve inside
// root, so an absolute path, a path climbing out of root and a symbolic link
// leading out of it are errors (never "missing"). A file found in neither
// place is an error unless ignoreMissing. Each file may hold at most
// DefaultMaxFileSize bytes. The result is nil when no file was read, so that
// the chart keeps its own values.
func MergeValuesFiles(root, chartPath string, files []string, ignoreMissing bool) (map[string]any, error) {
	if len(files) == 0 {
		return nil, nil
	}
	dir, err := localPath(chartPath)
	if err != nil {
		return nil, fmt.Errorf("chart path: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening source root: %w", err)
	}
	defer r.Close()
	return mergeValues(files, ignoreMissing, func(name string) ([]byte, error) {
		return readValuesFile(r, dir, name)
	})
}

// MergeChartValuesFiles merges, like MergeValuesFiles, values files taken
// from a loaded chart's own files (a packaged chart): names are relative to
// the chart, e.g. "values.yaml" or "values-prod.yaml", and may not be
// absolute or climb out of it.
func MergeChartValuesFiles(ch *chart.Chart, files []string, ignoreMissing bool) (map[string]any, error) {
	return mergeValues(files, ignoreMissing, func(name string) ([]byte, error) {
		return chartFile(ch, name)
	})
}

// mergeValues reads each file with read and merges the values in order.
func mergeValues(files []string, ignoreMissing bool, read func(string) ([]byte, error)) (map[string]any, error) {
	var merged map[string]any
	for _, name := range files {
		data, err := read(name)
		if errors.Is(err, fs.ErrNotExist) && ignoreMissing {
			continue
		}
		if err != nil {
			return nil, err
		}
		values, err := loader.LoadValues(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
		if err != nil {
			return nil, fmt.Errorf("parsing values file %q: %w", name, err)
		}
		merged = loader.MergeMaps(merged, values)
	}
	return merged, nil
}

// readValuesFile reads name relative to the root, else relative to the chart
// folder dir. A name that is missing in both places wraps fs.ErrNotExist.
func readValuesFile(r *os.Root, dir, name string) ([]byte, error) {
	if name == "" || path.IsAbs(name) || strings.HasPrefix(name, `\`) || (len(name) > 1 && name[1] == ':') {
		return nil, fmt.Errorf("values file %q must be a relative path inside the source", name)
	}
	var candidates []string
	if p, err := localPath(name); err == nil {
		candidates = append(candidates, p)
	}
	if p, err := localPath(path.Join(dir, name)); err == nil && !slices.Contains(candidates, p) {
		candidates = append(candidates, p)
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("values file %q resolves outside the source root", name)
	}
	for _, p := range candidates {
		data, err := readRootFile(r, p, DefaultMaxFileSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("values file %q: %w", name, err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("values file %q not found in the source root or the chart folder: %w", name, fs.ErrNotExist)
}

// chartFile returns the file name of a loaded chart: from Raw (every file
// the chart was loaded from), else from Files; "values.yaml" of a chart built
// in memory comes from its Values. A missing file wraps fs.ErrNotExist.
func chartFile(ch *chart.Chart, name string) ([]byte, error) {
	p, err := localPath(name)
	if err != nil || p == "." || path.IsAbs(name) {
		return nil, fmt.Errorf("values file %q must be a relative path inside the chart", name)
	}
	for _, list := range [][]*common.File{ch.Raw, ch.Files} {
		for _, f := range list {
			if f.Name == p {
				return f.Data, nil
			}
		}
	}
	if p == "values.yaml" && len(ch.Raw) == 0 && ch.Values != nil {
		return marshalValues(ch.Values)
	}
	return nil, fmt.Errorf("values file %q not found in chart %q: %w", name, ch.Name(), fs.ErrNotExist)
}
