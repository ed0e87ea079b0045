package repository

import (
	"reflect"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// FuzzParseIndex feeds arbitrary bytes to ParseIndex as an index.yaml, and
// a chart name and version range to Index.Get. ParseIndex has no size
// bound of its own (FetchIndex bounds the download). For an index it
// accepts, it asserts: an apiVersion; every entry is a non-nil version
// with a semantic version, named (after the chart's key, when the entry
// names none: only an entry under the empty key may stay unnamed); the
// versions of each chart highest first; Normalise's form parses back to
// the same index; and Get returns a version of that chart that is the
// range itself, or else the highest that satisfies it.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(sampleIndex), "podinfo", "")
	f.Add([]byte(sampleIndex), "podinfo", "~6.4")
	f.Add([]byte(sampleIndex), "podinfo", ">=6.0.0-0")
	f.Add([]byte(sampleIndex), "redis", "v1.0.0")
	f.Add([]byte(`{"apiVersion":"v1","entries":{"a":[{"name":"a","version":"0.1.0","urls":["a.tgz"]},{"name":"a","version":"0.2.0","urls":["a2.tgz"]}]}}`), "a", "<0.2.0")
	f.Add([]byte("apiVersion: v1\nentries:\n  a:\n  - version: v1.0.0\n  - version: 1.0.0\n"), "a", "1.0.0")
	f.Add([]byte("apiVersion: v1\nentries:\n  a:\n  - null\n  - {version: 2.0.0, deprecated: true, digest: abc}\n"), "a", "*")
	f.Add([]byte("apiVersion: v1\n"), "x", "")
	f.Add([]byte("entries: {}\n"), "", "")
	f.Add([]byte("apiVersion: [v1\n"), "", "")
	f.Add([]byte(`apiVersion: v1
entries:
  "":
  - version: 1.0.0
  other:
  - {name: renamed, version: 1.0.0+build.1, urls: [x.tgz]}
  - {version: 1.0.0+build.2}
`), "other", "1.0.0")
	f.Fuzz(func(t *testing.T, data []byte, name, versionRange string) {
		idx, err := ParseIndex(data)
		if err != nil {
			if idx != nil {
				t.Fatalf("ParseIndex returned an index with the error %v", err)
			}
			return
		}
		if idx.APIVersion == "" || idx.Entries == nil {
			t.Fatalf("accepted an index without apiVersion or entries: %+v", idx)
		}
		for key, versions := range idx.Entries {
			if len(versions) == 0 {
				t.Fatalf("chart %q has no versions", key)
			}
			for i, cv := range versions {
				if cv == nil || cv.semver == nil {
					t.Fatalf("chart %q: version %d is nil or not parsed", key, i)
				}
				if _, err := semver.NewVersion(cv.Version); err != nil {
					t.Fatalf("chart %q: kept version %q, not a semantic version", key, cv.Version)
				}
				if cv.Name == "" && key != "" {
					t.Fatalf("chart %q: version %q has no name", key, cv.Version)
				}
				if i > 0 && versions[i-1].semver.LessThan(cv.semver) {
					t.Fatalf("chart %q: %s is before %s", key, versions[i-1].Version, cv.Version)
				}
			}
		}
		norm, err := Normalise(idx)
		if err != nil {
			t.Fatalf("Normalise: %v", err)
		}
		again, err := ParseIndex(norm)
		if err != nil {
			t.Fatalf("the normalised index does not parse: %v\n%s", err, norm)
		}
		if !reflect.DeepEqual(again, idx) {
			t.Fatalf("the normalised index parses to another index\n%s", norm)
		}
		if n := idx.MemorySize(); n < 0 {
			t.Fatalf("MemorySize is %d", n)
		}

		cv, err := idx.Get(name, versionRange)
		if err != nil {
			return
		}
		found := false
		for _, v := range idx.Entries[name] {
			found = found || v == cv
		}
		if !found {
			t.Fatalf("Get(%q, %q) returned a version that is not one of the chart's", name, versionRange)
		}
		r := strings.TrimSpace(versionRange)
		if r == "" {
			r = "*"
		}
		if cv.Version != r {
			c, err := semver.NewConstraint(r)
			if err != nil || !c.Check(cv.semver) {
				t.Fatalf("Get(%q, %q) returned %s, which the range does not match", name, versionRange, cv.Version)
			}
			for _, v := range idx.Entries[name] {
				if v == cv {
					break
				}
				if c.Check(v.semver) {
					t.Fatalf("Get(%q, %q) returned %s, not the highest match %s", name, versionRange, cv.Version, v.Version)
				}
			}
		}
	})
}
