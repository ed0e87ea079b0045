package repository

import (
	"testing"

	. "github.com/onsi/gomega"
)

const sampleIndex = `apiVersion: v1
generated: "2024-01-01T00:00:00Z"
entries:
  podinfo:
  - name: podinfo
    version: 6.4.0
    urls: [podinfo-6.4.0.tgz]
    digest: aaa
    description: old
  - name: podinfo
    version: 6.5.0
    appVersion: "6.5.0"
    urls: [https://charts.example.com/podinfo-6.5.0.tgz]
    created: "2024-01-01T00:00:00Z"
  - name: podinfo
    version: 7.0.0-rc.1
    urls: [podinfo-7.0.0-rc.1.tgz]
  - name: podinfo
    version: not-semver
    urls: [bad.tgz]
  -
  redis:
  - version: 1.0.0
    urls: [redis-1.0.0.tgz]
  empty: []
`

func TestParseIndex(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		wantErr  string
		versions map[string][]string
	}{
		{name: "yaml", data: sampleIndex, versions: map[string][]string{
			"podinfo": {"7.0.0-rc.1", "6.5.0", "6.4.0"}, "redis": {"1.0.0"}}},
		{name: "json", data: `{"apiVersion":"v1","entries":{"a":[{"name":"a","version":"0.1.0","urls":["a.tgz"]},{"name":"a","version":"0.2.0","urls":["a2.tgz"]}]}}`,
			versions: map[string][]string{"a": {"0.2.0", "0.1.0"}}},
		{name: "equal versions sort by text", data: "apiVersion: v1\nentries:\n  a:\n  - version: v1.0.0\n  - version: 1.0.0\n",
			versions: map[string][]string{"a": {"1.0.0", "v1.0.0"}}},
		{name: "no entries", data: "apiVersion: v1\n", versions: map[string][]string{}},
		{name: "no apiVersion", data: "entries: {}\n", wantErr: "no apiVersion"},
		{name: "empty", data: "", wantErr: "empty"},
		{name: "not yaml", data: "apiVersion: [v1\n", wantErr: "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			idx, err := ParseIndex([]byte(tt.data))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			got := map[string][]string{}
			for name, cvs := range idx.Entries {
				for _, cv := range cvs {
					g.Expect(cv.Name).NotTo(BeEmpty())
					got[name] = append(got[name], cv.Version)
				}
			}
			g.Expect(got).To(Equal(tt.versions))
		})
	}
}

func TestNormaliseRevision(t *testing.T) {
	g := NewWithT(t)
	revision := func(data string) string {
		idx, err := ParseIndex([]byte(data))
		g.Expect(err).NotTo(HaveOccurred())
		norm, err := Normalise(idx)
		g.Expect(err).NotTo(HaveOccurred())
		again, err := ParseIndex(norm)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(idx), "the normalised form parses back to the same index")
		return Revision(norm)
	}
	base := revision(sampleIndex)
	g.Expect(base).To(MatchRegexp(`^sha256:[a-f0-9]{64}$`))

	reordered := `apiVersion: v1
generated: "2030-05-05T00:00:00Z"
entries:
  redis:
  - {version: 1.0.0, urls: [redis-1.0.0.tgz], name: redis}
  podinfo:
  - {name: podinfo, version: 7.0.0-rc.1, urls: [podinfo-7.0.0-rc.1.tgz]}
  - {name: podinfo, version: 6.5.0, appVersion: "6.5.0", urls: [https://charts.example.com/podinfo-6.5.0.tgz]}
  - {name: podinfo, version: 6.4.0, urls: [podinfo-6.4.0.tgz], digest: aaa}
`
	g.Expect(revision(reordered)).To(Equal(base), "same charts in another order and generation time")

	changed := `apiVersion: v1
entries:
  redis:
  - {version: 1.0.1, urls: [redis-1.0.1.tgz]}
`
	g.Expect(revision(changed)).NotTo(Equal(base))

	_, err := Normalise(nil)
	g.Expect(err).To(HaveOccurred())
}

func TestIndexGet(t *testing.T) {
	idx, err := ParseIndex([]byte(sampleIndex))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	tests := []struct {
		chart, versionRange string
		want                string
		wantErr             error
		wantErrText         string
	}{
		{chart: "podinfo", versionRange: "", want: "6.5.0"},
		{chart: "podinfo", versionRange: "*", want: "6.5.0"},
		{chart: "podinfo", versionRange: "6.4.0", want: "6.4.0"},
		{chart: "podinfo", versionRange: "v6.4.0", want: "6.4.0"},
		{chart: "podinfo", versionRange: "<6.5.0", want: "6.4.0"},
		{chart: "podinfo", versionRange: "~6.4", want: "6.4.0"},
		{chart: "podinfo", versionRange: ">=6.0.0-0", want: "7.0.0-rc.1"},
		{chart: "podinfo", versionRange: "7.0.0-rc.1", want: "7.0.0-rc.1"},
		{chart: "podinfo", versionRange: ">=7.0.0", wantErr: ErrVersionNotFound, wantErrText: `no version of chart "podinfo" matches ">=7.0.0"`},
		{chart: "podinfo", versionRange: "6.4.1", wantErr: ErrVersionNotFound},
		{chart: "podinfo", versionRange: "not a range", wantErrText: "not a valid semver range"},
		{chart: "nginx", wantErr: ErrChartNotFound, wantErrText: `no chart named "nginx"`},
		{chart: "empty", wantErr: ErrChartNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"@"+tt.versionRange, func(t *testing.T) {
			g := NewWithT(t)
			cv, err := idx.Get(tt.chart, tt.versionRange)
			if tt.wantErr != nil || tt.wantErrText != "" {
				g.Expect(err).To(HaveOccurred())
				if tt.wantErr != nil {
					g.Expect(err).To(MatchError(tt.wantErr))
				}
				g.Expect(err.Error()).To(ContainSubstring(tt.wantErrText))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cv.Version).To(Equal(tt.want))
		})
	}
}
