package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// SourceHelm serves the chart of a -kind helmrelease run from one HTTP
// chart repository (an index.yaml and one chart package) on loopback,
// behind one HelmRepository.
const SourceHelm = "helm"

// The chart every HelmRelease installs, and the HelmRepository it comes
// from.
const (
	benchChartName    = "bench-app"
	benchChartVersion = "0.1.0"
	helmRepoName      = "bench-charts"
)

// Labels of the chart repository's GETs answered with a body: of the
// index and of a chart package. A conditional GET answered 304 Not
// Modified sends nothing and is not counted. Only chart packages are
// content downloads (Downloads): the index is how a HelmRepository learns
// whether anything changed, as a git reference listing is for a
// GitRepository, and is counted apart (IndexGets).
const (
	indexGets = "index_gets"
	chartGets = "chart_gets"
)

// chartTemplates are the templates of the bench chart, the workload of
// one application named after its release: a ServiceAccount, a Service
// and a Deployment scaled to zero (appManifests without the ConfigMap,
// which the Kustomizations' change phase edits).
var chartTemplates = map[string]string{
	"templates/serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    app: {{ .Release.Name }}
  ports:
  - name: http
    port: 80
    targetPort: 8080
`,
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}
    spec:
      serviceAccountName: {{ .Release.Name }}
      containers:
      - name: app
        image: {{ .Values.image }}
        ports:
        - containerPort: 8080
`,
}

// chartValues is the values.yaml of the bench chart.
const chartValues = `replicas: 0
image: registry.invalid/bench/app:1.0.0
`

// helmKit serves one chart repository over plain HTTP on loopback: the
// index and the package of the bench chart, built with the Helm SDK, from
// memory. It answers conditional GETs of the index (ETag) and counts what
// it sends in full.
type helmKit struct {
	srv *http.Server
	url string
	// files are the repository's files by URL path: /index.yaml and the
	// chart package.
	files map[string][]byte
	// modTime is served as Last-Modified.
	modTime time.Time

	mu     sync.Mutex
	counts map[string]int64
}

// startHelmKit builds the bench chart and its index in folder dir and
// serves them on a free loopback port.
func startHelmKit(dir string) (_ *helmKit, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &helmKit{url: "http://" + ln.Addr().String(), modTime: time.Now().UTC().Truncate(time.Second),
		counts: map[string]int64{indexGets: 0, chartGets: 0}}
	if k.files, err = buildChartRepository(dir, k.url); err != nil {
		_ = ln.Close()
		return nil, err
	}
	k.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(k.serve)}
	go func() { _ = k.srv.Serve(ln) }()
	return k, nil
}

// buildChartRepository packages the bench chart into dir with the Helm
// SDK, indexes dir for the repository at baseURL, and returns the index
// and the package by URL path.
func buildChartRepository(dir, baseURL string) (map[string][]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ch := &chartv2.Chart{
		Metadata: &chartv2.Metadata{
			APIVersion:  chartv2.APIVersionV2,
			Name:        benchChartName,
			Version:     benchChartVersion,
			AppVersion:  "1.0.0",
			Type:        "application",
			Description: "The workload of one benchmark application: a Deployment scaled to zero, a ServiceAccount and a Service.",
		},
		Raw: []*common.File{{Name: chartutil.ValuesfileName, Data: []byte(chartValues)}},
	}
	for _, name := range []string{"templates/serviceaccount.yaml", "templates/service.yaml", "templates/deployment.yaml"} {
		ch.Templates = append(ch.Templates, &common.File{Name: name, Data: []byte(chartTemplates[name])})
	}
	pkg, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, fmt.Errorf("packaging the bench chart: %w", err)
	}
	index, err := repov1.IndexDirectory(dir, baseURL)
	if err != nil {
		return nil, fmt.Errorf("indexing the bench chart repository: %w", err)
	}
	index.SortEntries()
	if len(index.Entries[benchChartName]) != 1 {
		return nil, fmt.Errorf("the index of %s holds %d versions of %s, not 1", dir, len(index.Entries[benchChartName]), benchChartName)
	}
	indexPath := filepath.Join(dir, "index.yaml")
	if err := index.WriteFile(indexPath, 0o644); err != nil {
		return nil, fmt.Errorf("writing the index: %w", err)
	}
	files := map[string][]byte{}
	for urlPath, p := range map[string]string{"/index.yaml": indexPath, "/" + filepath.Base(pkg): pkg} {
		if files[urlPath], err = os.ReadFile(p); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// serve answers GET and HEAD of the repository's files; the ETag (the
// content's length and a hash of it) lets clients ask for the index only
// when it changed.
func (k *helmKit) serve(w http.ResponseWriter, r *http.Request) {
	data, ok := k.files[r.URL.Path]
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", etagOf(data))
	if strings.HasSuffix(r.URL.Path, ".yaml") {
		w.Header().Set("Content-Type", "application/yaml")
	} else {
		w.Header().Set("Content-Type", "application/gzip")
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	http.ServeContent(sw, r, r.URL.Path, k.modTime, bytes.NewReader(data))
	if what := classifyChartGet(r, sw.status); what != "" {
		k.mu.Lock()
		k.counts[what]++
		k.mu.Unlock()
	}
}

// etagOf returns a strong ETag for data: a hash of it.
func etagOf(data []byte) string {
	sum := sha256.Sum256(data)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// classifyChartGet names what a chart repository request downloaded:
// indexGets for a GET of index.yaml, chartGets for a GET of a .tgz, when
// answered with a body (status 200 or 206); "" for anything else.
func classifyChartGet(r *http.Request, status int) string {
	if r.Method != http.MethodGet || (status != http.StatusOK && status != http.StatusPartialContent) {
		return ""
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/index.yaml"):
		return indexGets
	case strings.HasSuffix(r.URL.Path, ".tgz"):
		return chartGets
	}
	return ""
}

// statusWriter records the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status code and sends it.
func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// helmRepository returns the run's one HelmRepository in namespace ns,
// for the chart repository at url, with the long interval of every
// source.
func helmRepository(ns, url string) *sourcev1.HelmRepository {
	return &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: helmRepoName},
		Spec: sourcev1.HelmRepositorySpec{
			URL:      url,
			Interval: metav1.Duration{Duration: sourceInterval},
		},
	}
}

// Kind implements sourceKit.
func (k *helmKit) Kind() string { return sourcev1.HelmRepositoryKind }

// NewObject implements sourceKit.
func (k *helmKit) NewObject() client.Object { return &sourcev1.HelmRepository{} }

// NewList implements sourceKit.
func (k *helmKit) NewList() client.ObjectList { return &sourcev1.HelmRepositoryList{} }

// Prepare implements sourceKit: the repository asks for no credentials.
func (k *helmKit) Prepare(context.Context, client.Client, string) error { return nil }

// Sources implements sourceKit: the one HelmRepository.
func (k *helmKit) Sources(ns string) []client.Object {
	return []client.Object{helmRepository(ns, k.url)}
}

// SourceName implements sourceKit: every release's chart comes from the
// one HelmRepository.
func (k *helmKit) SourceName(int) string { return helmRepoName }

// AppPath implements sourceKit: a release names a chart, not a folder.
func (k *helmKit) AppPath(int) string { return "" }

// Heads implements sourceKit: the one chart version every release
// installs.
func (k *helmKit) Heads() (map[string]string, error) {
	return map[string]string{helmRepoName: benchChartVersion}, nil
}

// errNoHelmChange says that a -kind helmrelease run has no change phase.
var errNoHelmChange = errors.New("a helmrelease run changes no chart: it has no change phase")

// Change implements sourceKit: a helmrelease run has no change phase.
func (k *helmKit) Change(context.Context) (string, error) { return "", errNoHelmChange }

// Downloads implements sourceKit: the GETs of the chart package answered
// with a body.
func (k *helmKit) Downloads() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return map[string]int64{chartGets: k.counts[chartGets]}
}

// IndexGets returns the number of GETs of the index answered with a body
// so far.
func (k *helmKit) IndexGets() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.counts[indexGets]
}

// Server implements sourceKit.
func (k *helmKit) Server() string {
	return fmt.Sprintf("HTTP chart repository at %s (index.yaml, %s-%s.tgz)", k.url, benchChartName, benchChartVersion)
}

// Close implements sourceKit.
func (k *helmKit) Close() { _ = k.srv.Close() }
