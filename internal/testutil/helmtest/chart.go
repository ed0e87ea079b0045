package helmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// DefaultTemplate is the template every chart has unless replaced: a
// ConfigMap named "<release>-cm" whose data.greeting is .Values.greeting
// ("hello" when unset).
const DefaultTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ .Values.greeting | default "hello" | quote }}
`

// DefaultTemplateName is the file name of DefaultTemplate in the chart.
const DefaultTemplateName = "templates/configmap.yaml"

// modTime is the modification time of every file of a built chart, so that
// packaging one chart twice gives the same bytes.
var modTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// ChartOption changes a chart that Chart builds.
type ChartOption func(*chart.Chart)

// WithTemplate adds the template body under templates/ (name may include
// the "templates/" prefix or not); a template of the same name, such as
// DefaultTemplateName, is replaced.
func WithTemplate(name, body string) ChartOption {
	if !strings.HasPrefix(name, "templates/") {
		name = "templates/" + name
	}
	return func(ch *chart.Chart) {
		ch.Templates = putFile(ch.Templates, name, []byte(body))
	}
}

// WithoutTemplates removes every template added so far, the default one
// included.
func WithoutTemplates() ChartOption {
	return func(ch *chart.Chart) { ch.Templates = nil }
}

// WithValues sets the chart's default values (values.yaml), replacing the
// default {greeting: hello}.
func WithValues(values map[string]any) ChartOption {
	return func(ch *chart.Chart) { ch.Values = values }
}

// WithAppVersion sets the chart's appVersion.
func WithAppVersion(v string) ChartOption {
	return func(ch *chart.Chart) { ch.Metadata.AppVersion = v }
}

// WithType sets the chart's type: "application" (the default) or
// "library".
func WithType(typ string) ChartOption {
	return func(ch *chart.Chart) { ch.Metadata.Type = typ }
}

// WithFile adds a raw file to the chart, such as "crds/crd.yaml" or
// "README.md"; a file of the same name is replaced.
func WithFile(name string, data []byte) ChartOption {
	return func(ch *chart.Chart) { ch.Files = putFile(ch.Files, name, data) }
}

// WithSchema sets the chart's values.schema.json.
func WithSchema(schemaJSON string) ChartOption {
	return func(ch *chart.Chart) {
		ch.Schema = []byte(schemaJSON)
		ch.SchemaModTime = modTime
	}
}

// WithSubchart vendors sub under charts/ and declares it in Chart.yaml's
// dependencies (name and version, no repository).
func WithSubchart(sub *chart.Chart) ChartOption {
	return func(ch *chart.Chart) {
		ch.AddDependency(sub)
		ch.Metadata.Dependencies = append(ch.Metadata.Dependencies, &chart.Dependency{
			Name:    sub.Name(),
			Version: sub.Metadata.Version,
		})
	}
}

// WithDependency declares a dependency in Chart.yaml without vendoring it,
// for tests of dependency builds: repository is an https://, oci://,
// file:// or "@alias" reference, versionRange a semver range.
func WithDependency(name, versionRange, repository string) ChartOption {
	return func(ch *chart.Chart) {
		ch.Metadata.Dependencies = append(ch.Metadata.Dependencies, &chart.Dependency{
			Name:       name,
			Version:    versionRange,
			Repository: repository,
		})
	}
}

// WithMetadata lets a test change any other field of Chart.yaml.
func WithMetadata(fn func(*chart.Metadata)) ChartOption {
	return func(ch *chart.Chart) { fn(ch.Metadata) }
}

// Chart builds an apiVersion v2 chart in memory with the default template
// and values, then applies opts. It fails t when the chart is not valid.
func Chart(t testing.TB, name, version string, opts ...ChartOption) *chart.Chart {
	t.Helper()
	ch := &chart.Chart{
		Metadata: &chart.Metadata{
			APIVersion: chart.APIVersionV2,
			Name:       name,
			Version:    version,
			Type:       "application",
		},
		Values:  map[string]any{"greeting": "hello"},
		ModTime: modTime,
	}
	WithTemplate(DefaultTemplateName, DefaultTemplate)(ch)
	for _, opt := range opts {
		opt(ch)
	}
	if err := setValuesFile(ch); err != nil {
		t.Fatalf("helmtest: values of chart %s: %v", name, err)
	}
	if err := ch.Validate(); err != nil {
		t.Fatalf("helmtest: chart %s-%s is not valid: %v", name, version, err)
	}
	return ch
}

// setValuesFile writes ch.Values as the raw values.yaml that the SDK
// saves.
func setValuesFile(ch *chart.Chart) error {
	data := []byte{}
	if len(ch.Values) > 0 {
		var err error
		if data, err = yaml.Marshal(ch.Values); err != nil {
			return err
		}
	}
	ch.Raw = putFile(ch.Raw, chartutil.ValuesfileName, data)
	return nil
}

// putFile replaces the file called name in files, or appends it.
func putFile(files []*common.File, name string, data []byte) []*common.File {
	f := &common.File{Name: name, Data: data, ModTime: modTime}
	for i := range files {
		if files[i].Name == name {
			files[i] = f
			return files
		}
	}
	return append(files, f)
}

// Package writes ch as <name>-<version>.tgz in dir and returns its path.
func Package(t testing.TB, ch *chart.Chart, dir string) string {
	t.Helper()
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatalf("helmtest: package chart %s: %v", ch.Name(), err)
	}
	return path
}

// Archive returns the packaged .tgz of ch.
func Archive(t testing.TB, ch *chart.Chart) []byte {
	t.Helper()
	data, err := os.ReadFile(Package(t, ch, t.TempDir()))
	if err != nil {
		t.Fatalf("helmtest: read packaged chart %s: %v", ch.Name(), err)
	}
	return data
}

// WriteDir writes ch as the folder dir/<name> and returns its path.
func WriteDir(t testing.TB, ch *chart.Chart, dir string) string {
	t.Helper()
	if err := chartutil.SaveDir(ch, dir); err != nil {
		t.Fatalf("helmtest: write chart %s as a folder: %v", ch.Name(), err)
	}
	return filepath.Join(dir, ch.Name())
}
