package chart

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// loadTestChart writes a chart with a file:// dependency and two vendored
// subcharts under a new root and loads it with its dependencies.
func loadTestChart(t *testing.T, root string) *chart.Chart {
	t.Helper()
	ch, err := LoadDir(root, "app", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ResolveDependencies(context.Background(), root, "app", ch, Limits{}, nil); err != nil {
		t.Fatal(err)
	}
	return ch
}

// writeTestChart writes the chart loadTestChart loads.
func writeTestChart(t *testing.T, root string) {
	t.Helper()
	writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||file://../lib"))
	writeTree(t, root, chartFiles("lib", "lib", "0.1.0"))
	writeTree(t, root, chartFiles("app/charts/b", "b", "0.1.0"))
	writeTree(t, root, chartFiles("app/charts/a", "a", "0.1.0"))
	writeTree(t, root, map[string]string{"app/values.yaml": "replicas: 1\nimage:\n  tag: v1\n"})
}

func TestPackage(t *testing.T) {
	root := t.TempDir()
	writeTestChart(t, root)
	tests := []struct {
		name        string
		version     string
		values      map[string]any
		wantErr     string
		wantVersion string
		wantValues  map[string]any
	}{{
		name:        "version and values overridden",
		version:     "1.0.0+abcdef123456",
		values:      map[string]any{"replicas": 3, "image": map[string]any{"tag": "v2"}},
		wantVersion: "1.0.0+abcdef123456",
		wantValues:  map[string]any{"replicas": 3.0, "image": map[string]any{"tag": "v2"}},
	}, {
		name:        "empty values replace the chart's",
		values:      map[string]any{},
		wantVersion: "1.0.0",
		wantValues:  map[string]any{},
	}, {
		name:        "nothing overridden",
		wantVersion: "1.0.0",
		wantValues:  map[string]any{"replicas": 1.0, "image": map[string]any{"tag": "v1"}},
	}, {
		name:    "invalid version",
		version: "not-semver",
		wantErr: "validation",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := loadTestChart(t, root)
			data, err := Package(ch, tt.version, tt.values)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())

			got, err := LoadArchive(data, Limits{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Name()).To(Equal("app"))
			g.Expect(got.Metadata.Version).To(Equal(tt.wantVersion))
			g.Expect(got.Values).To(Equal(tt.wantValues))
			g.Expect(fileNames(got.Templates)).To(ConsistOf("templates/cm.yaml", "templates/NOTES.txt"))
			g.Expect(depNames(got)).To(ConsistOf("a@0.1.0", "b@0.1.0", "lib@0.1.0"))

			g.Expect(ch.Metadata.Version).To(Equal("1.0.0"), "the input chart is unchanged")
			g.Expect(ch.Values).To(HaveKeyWithValue("replicas", BeNumerically("==", 1)))
		})
	}
}

func TestPackageIsReproducible(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTestChart(t, root)
	first, err := Package(loadTestChart(t, root), "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	later := time.Now().Add(time.Hour)
	g.Expect(filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, later, later)
	})).To(Succeed())
	for range 5 {
		again, err := Package(loadTestChart(t, root), "", nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(first))
	}
}

func TestPackageWithoutMetadata(t *testing.T) {
	g := NewWithT(t)
	_, err := Package(&chart.Chart{}, "", nil)
	g.Expect(err).To(MatchError(ContainSubstring("no chart metadata")))
}

func TestRevisionVersion(t *testing.T) {
	const sha1 = "abcdef1234567890abcdef1234567890abcdef12"
	tests := []struct {
		version, revision, want string
	}{
		{version: "1.2.3", revision: "main@sha1:" + sha1, want: "1.2.3+abcdef123456"},
		{version: "1.2.3", revision: "refs/pull/1/head@sha1:" + sha1, want: "1.2.3+abcdef123456"},
		{version: "1.2.3", revision: "sha1:" + sha1, want: "1.2.3+abcdef123456"},
		{version: "1.2.3", revision: "sha256:ABCDEF0123456789ff", want: "1.2.3+abcdef012345"},
		{version: "1.2.3", revision: "v1.0.0@sha256:0123456789abcdef", want: "1.2.3+0123456789ab"},
		{version: "1.2.3", revision: "main/" + sha1, want: "1.2.3+abcdef123456"},
		{version: "1.2.3", revision: "abc", want: "1.2.3+abc"},
		{version: "1.2.3+old.meta", revision: "sha1:" + sha1, want: "1.2.3+abcdef123456"},
		{version: "1.2.3-rc.1", revision: "sha1:" + sha1, want: "1.2.3-rc.1+abcdef123456"},
		{version: "1.2.3", revision: "", want: "1.2.3"},
		{version: "1.2.3", revision: "main@sha1:", want: "1.2.3"},
		{version: "1.2.3", revision: "main@sha1:not-hex!", want: "1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.version+" "+tt.revision, func(t *testing.T) {
			NewWithT(t).Expect(RevisionVersion(tt.version, tt.revision)).To(Equal(tt.want))
		})
	}
}
