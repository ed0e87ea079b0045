package repository

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	yaml "go.yaml.in/yaml/v3"
)

// Sentinel errors of ParseIndex and Index.Get.
var (
	// ErrNoAPIVersion is wrapped when an index has no apiVersion, which
	// Helm refuses too.
	ErrNoAPIVersion = errors.New("the index has no apiVersion")
	// ErrChartNotFound is wrapped when the index has no chart of the name.
	ErrChartNotFound = errors.New("no chart of that name")
	// ErrVersionNotFound is wrapped when no version of the chart matches
	// the range.
	ErrVersionNotFound = errors.New("no matching chart version")
)

// Index is a parsed repository index: per chart name, its versions newest
// first. An Index from ParseIndex or an IndexCache is shared: do not
// change it.
type Index struct {
	// APIVersion is the index's apiVersion ("v1").
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	// Entries are the versions of each chart, highest semver first.
	Entries map[string][]*ChartVersion `json:"entries" yaml:"entries"`
}

// ChartVersion is one version of a chart in an index: the fields that
// selection and download need.
type ChartVersion struct {
	// Name is the chart's name.
	Name string `json:"name" yaml:"name"`
	// Version is the chart's version, a semantic version.
	Version string `json:"version" yaml:"version"`
	// AppVersion is the version of the application the chart installs.
	AppVersion string `json:"appVersion,omitempty" yaml:"appVersion,omitempty"`
	// Deprecated says the chart is no longer maintained.
	Deprecated bool `json:"deprecated,omitempty" yaml:"deprecated,omitempty"`
	// URLs are where the .tgz is, absolute or relative to the repository.
	URLs []string `json:"urls" yaml:"urls"`
	// Digest is the sha256 (hex) of the .tgz, as the index states it.
	Digest string `json:"digest,omitempty" yaml:"digest,omitempty"`

	semver *semver.Version
}

// ParseIndex parses an index.yaml (YAML or JSON). Versions that are not
// semantic versions, and empty entries, are dropped as Helm does; the
// versions of each chart are sorted highest first (equal versions by their
// text). An index without apiVersion is refused (ErrNoAPIVersion).
func ParseIndex(data []byte) (*Index, error) {
	if len(data) == 0 {
		return nil, errors.New("the index is empty")
	}
	idx := &Index{}
	var err error
	if json.Valid(data) {
		err = json.Unmarshal(data, idx)
	} else {
		err = yaml.Unmarshal(data, idx)
	}
	if err != nil {
		return nil, fmt.Errorf("the index is not valid YAML: %s", firstLine(err))
	}
	if idx.APIVersion == "" {
		return nil, ErrNoAPIVersion
	}
	for name, versions := range idx.Entries {
		versions = cleanVersions(name, versions)
		if len(versions) == 0 {
			delete(idx.Entries, name)
			continue
		}
		idx.Entries[name] = versions
	}
	if idx.Entries == nil {
		idx.Entries = map[string][]*ChartVersion{}
	}
	return idx, nil
}

// cleanVersions drops the empty entries and those without a semantic
// version, fills in the name, and sorts highest first.
func cleanVersions(name string, versions []*ChartVersion) []*ChartVersion {
	kept := versions[:0]
	for _, cv := range versions {
		if cv == nil {
			continue
		}
		v, err := semver.NewVersion(cv.Version)
		if err != nil {
			continue
		}
		cv.semver = v
		if cv.Name == "" {
			cv.Name = name
		}
		kept = append(kept, cv)
	}
	clear(versions[len(kept):])
	sort.SliceStable(kept, func(i, j int) bool {
		if c := kept[i].semver.Compare(kept[j].semver); c != 0 {
			return c > 0
		}
		return kept[i].Version < kept[j].Version
	})
	return kept
}

// Normalise returns the stored form of idx: JSON (which is YAML) with
// sorted keys and sorted versions, so that indexes with the same charts
// give the same bytes whatever their order, formatting, generation time or
// fields this package does not keep.
func Normalise(idx *Index) ([]byte, error) {
	if idx == nil {
		return nil, errors.New("no index")
	}
	data, err := json.Marshal(idx)
	if err != nil {
		return nil, fmt.Errorf("writing the index: %w", err)
	}
	return append(data, '\n'), nil
}

// Revision returns the revision of a normalised index: "sha256:<hex>".
func Revision(normalised []byte) string {
	sum := sha256.Sum256(normalised)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Get returns the highest version of chart name that satisfies
// versionRange, a semver range ("" means "*"; an exact version matches
// itself; pre-releases match only a range that names one).
func (idx *Index) Get(name, versionRange string) (*ChartVersion, error) {
	versions := idx.Entries[name]
	if len(versions) == 0 {
		return nil, fmt.Errorf("%w: the index has no chart named %q", ErrChartNotFound, name)
	}
	r := strings.TrimSpace(versionRange)
	if r == "" {
		r = "*"
	}
	for _, cv := range versions {
		if cv.Version == r {
			return cv, nil
		}
	}
	c, err := semver.NewConstraint(r)
	if err != nil {
		return nil, fmt.Errorf("version %q of chart %q is not a valid semver range: %s", versionRange, name, firstLine(err))
	}
	for _, cv := range versions {
		if c.Check(cv.semver) {
			return cv, nil
		}
	}
	return nil, fmt.Errorf("%w: no version of chart %q matches %q (the latest is %s)",
		ErrVersionNotFound, name, r, versions[0].Version)
}

// firstLine returns the first line of err's message.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// Estimated bytes of memory a parsed index holds besides the text of its
// fields: per chart version (the ChartVersion, its parsed semver, its
// URL list, rounded up by the allocator) and per chart name (the map
// entry and the list of versions). Measured with a Bitnami-like index by
// TestIndexMemorySize.
const (
	versionOverhead = 200
	chartOverhead   = 96
)

// MemorySize estimates the bytes idx holds in memory: the text of the
// fields it keeps, plus a measured overhead per chart and per version.
// The fields an index file carries beyond those (descriptions,
// maintainers, …) are dropped when it is parsed and cost nothing.
func (idx *Index) MemorySize() int64 {
	var n int64
	for name, versions := range idx.Entries {
		n += chartOverhead + int64(len(name)+8*cap(versions))
		for _, cv := range versions {
			n += versionOverhead + int64(len(cv.Name)+len(cv.Version)+len(cv.AppVersion)+len(cv.Digest))
			for _, u := range cv.URLs {
				n += int64(len(u))
			}
		}
	}
	return n
}
