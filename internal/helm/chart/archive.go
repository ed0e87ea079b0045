package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// utf8BOM is the UTF-8 byte order mark trimmed from every loaded file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// LoadArchive loads a chart package (a gzip-compressed tarball) from data
// under the limits l. It refuses the whole package when an entry is a link or
// another special file, when a name is absolute or climbs out with "..", and
// when a size or count limit is passed; nested subchart archives get the same
// checks.
func LoadArchive(data []byte, l Limits) (*chart.Chart, error) {
	b := newBudget(l)
	files, err := readArchive(data, b, 0)
	if err != nil {
		return nil, fmt.Errorf("reading chart package: %w", err)
	}
	return loadFiles(files)
}

// loadFiles hands checked files to the Helm SDK, turning a panic into an
// error.
func loadFiles(files []*archive.BufferedFile) (*chart.Chart, error) {
	var ch *chart.Chart
	err := Safely(func() error {
		var err error
		ch, err = loader.LoadFiles(files)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("loading chart: %w", err)
	}
	return ch, nil
}

// readArchive reads the files of a chart package, charging b, and checks the
// nested subchart archives among them; depth is the nesting level of data.
func readArchive(data []byte, b *budget, depth int) ([]*archive.BufferedFile, error) {
	if size := int64(len(data)); size > b.limits.MaxChartSize {
		return nil, fmt.Errorf("chart package is %d bytes, more than the limit of %d", size, b.limits.MaxChartSize)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("opening gzip stream: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var files []*archive.BufferedFile
	seen := map[string]bool{}
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading tar stream: %w", err)
		}
		f, err := readEntry(tr, hd, b)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("archive entry %q appears twice", hd.Name)
		}
		seen[f.Name] = true
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, errors.New("no files in chart package")
	}
	if err := checkNested(files, b, depth); err != nil {
		return nil, err
	}
	return files, nil
}

// readEntry reads one tar entry: nil for entries that carry no file (folders,
// PAX headers), an error for anything but a regular file.
func readEntry(tr *tar.Reader, hd *tar.Header, b *budget) (*archive.BufferedFile, error) {
	switch hd.Typeflag {
	case tar.TypeDir, tar.TypeXGlobalHeader, tar.TypeXHeader:
		return nil, nil
	case tar.TypeReg:
	case tar.TypeSymlink, tar.TypeLink:
		return nil, fmt.Errorf("archive entry %q is a link, which charts may not contain", hd.Name)
	default:
		return nil, fmt.Errorf("archive entry %q has unsupported type %q", hd.Name, hd.Typeflag)
	}
	name, err := entryName(hd.Name)
	if err != nil {
		return nil, err
	}
	if err := b.take(name, hd.Size); err != nil {
		return nil, err
	}
	data := make([]byte, hd.Size)
	if _, err := io.ReadFull(tr, data); err != nil {
		return nil, fmt.Errorf("reading archive entry %q: %w", hd.Name, err)
	}
	return &archive.BufferedFile{
		Name:    name,
		ModTime: hd.ModTime,
		Data:    bytes.TrimPrefix(data, utf8BOM),
	}, nil
}

// entryName checks the name of a tar entry and returns it without its first
// element (the chart's folder), as the chart-relative name the SDK expects.
func entryName(raw string) (string, error) {
	switch {
	case raw == "":
		return "", errors.New("archive entry with an empty name")
	case strings.ContainsRune(raw, '\\'):
		return "", fmt.Errorf("archive entry %q contains a backslash", raw)
	case strings.HasPrefix(raw, "/"):
		return "", fmt.Errorf("archive entry %q has an absolute name", raw)
	case len(raw) > 1 && raw[1] == ':':
		return "", fmt.Errorf("archive entry %q has a drive letter", raw)
	}
	parts := strings.Split(raw, "/")
	for _, p := range parts {
		if p == ".." {
			return "", fmt.Errorf("archive entry %q refers to a parent folder", raw)
		}
	}
	if len(parts) < 2 {
		return "", fmt.Errorf("archive entry %q is not inside the chart's folder", raw)
	}
	name := path.Clean(strings.Join(parts[1:], "/"))
	if name == "." {
		return "", fmt.Errorf("archive entry %q is not inside the chart's folder", raw)
	}
	return name, nil
}

// checkNested checks, with the same rules and budget, every subchart archive
// among files that the SDK would load, so that the SDK only ever opens
// archives that passed them.
func checkNested(files []*archive.BufferedFile, b *budget, depth int) error {
	for _, f := range files {
		if !isSubchartArchive(f.Name) {
			continue
		}
		if depth+1 >= b.limits.MaxDepth {
			return fmt.Errorf("subchart archive %q is nested more than %d levels deep", f.Name, b.limits.MaxDepth)
		}
		if _, err := readArchive(f.Data, b, depth+1); err != nil {
			return fmt.Errorf("subchart archive %q: %w", f.Name, err)
		}
	}
	return nil
}

// isSubchartArchive tells whether the SDK's loader opens name as a subchart
// package: charts/<x>.tgz, also inside unpacked subcharts
// (charts/a/charts/<x>.tgz), unless a subchart name starts with "_" or ".".
func isSubchartArchive(name string) bool {
	parts := strings.Split(name, "/")
	if len(parts)%2 != 0 || !strings.HasSuffix(name, ".tgz") {
		return false
	}
	for i, p := range parts {
		if i%2 == 0 && p != "charts" {
			return false
		}
		if i%2 == 1 && (strings.HasPrefix(p, "_") || strings.HasPrefix(p, ".")) {
			return false
		}
	}
	return true
}
