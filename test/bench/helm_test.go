package main

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// get fetches url with the request headers hdr and returns the status,
// the ETag and the body.
func get(t *testing.T, method, url string, hdr map[string]string) (int, string, []byte) {
	t.Helper()
	g := NewWithT(t)
	req, err := http.NewRequest(method, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header.Get("ETag"), body
}

// TestHelmKit serves the chart repository and checks that its index
// names the one chart at the server, that the package renders the
// workload of one application named after the release, and that only the
// GETs answered with a body are counted.
func TestHelmKit(t *testing.T) {
	g := NewWithT(t)
	k, err := startHelmKit(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	defer k.Close()
	g.Expect(k.Downloads()).To(Equal(map[string]int64{chartGets: 0}))
	g.Expect(k.IndexGets()).To(BeZero())

	status, etag, data := get(t, http.MethodGet, k.url+"/index.yaml", nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(etag).NotTo(BeEmpty())
	indexPath := filepath.Join(t.TempDir(), "index.yaml")
	g.Expect(os.WriteFile(indexPath, data, 0o644)).To(Succeed())
	index, err := repov1.LoadIndexFile(indexPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Entries).To(HaveLen(1))
	versions := index.Entries[benchChartName]
	g.Expect(versions).To(HaveLen(1))
	g.Expect(versions[0].Version).To(Equal(benchChartVersion))
	chartURL := k.url + "/" + benchChartName + "-" + benchChartVersion + ".tgz"
	g.Expect(versions[0].URLs).To(Equal([]string{chartURL}))

	// A conditional GET of an unchanged index, and HEAD requests, are
	// not downloads.
	status, _, _ = get(t, http.MethodGet, k.url+"/index.yaml", map[string]string{"If-None-Match": etag})
	g.Expect(status).To(Equal(http.StatusNotModified))
	status, _, _ = get(t, http.MethodHead, chartURL, nil)
	g.Expect(status).To(Equal(http.StatusOK))
	status, _, _ = get(t, http.MethodGet, k.url+"/other-0.1.0.tgz", nil)
	g.Expect(status).To(Equal(http.StatusNotFound))
	status, _, pkg := get(t, http.MethodGet, chartURL, nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(k.Downloads()).To(Equal(map[string]int64{chartGets: 1}))
	g.Expect(k.IndexGets()).To(Equal(int64(1)))

	objs := renderChart(t, pkg, "app-7")
	g.Expect(objs).To(HaveLen(3))
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		g.Expect(o.GetName()).To(Equal("app-7"))
		if o.GetKind() == "Deployment" {
			replicas, found, err := unstructured.NestedFieldNoCopy(o.Object, "spec", "replicas")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue(), "spec.replicas")
			g.Expect(replicas).To(BeNumerically("==", 0))
		}
	}
	slices.Sort(kinds)
	g.Expect(kinds).To(Equal([]string{"Deployment", "Service", "ServiceAccount"}))
}

// renderChart renders the packaged chart pkg for a release named release
// and returns its objects.
func renderChart(t *testing.T, pkg []byte, release string) []*unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	ch, err := loader.LoadArchive(bytes.NewReader(pkg))
	g.Expect(err).NotTo(HaveOccurred())
	vals, err := util.ToRenderValues(ch, nil, common.ReleaseOptions{Name: release, Namespace: "bench", IsInstall: true}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	rendered, err := engine.Render(ch, vals)
	g.Expect(err).NotTo(HaveOccurred())
	var objs []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered[name]), 4096)
		for {
			o := &unstructured.Unstructured{}
			err := dec.Decode(&o.Object)
			if err == io.EOF {
				break
			}
			g.Expect(err).NotTo(HaveOccurred(), name)
			if len(o.Object) > 0 {
				objs = append(objs, o)
			}
		}
	}
	return objs
}

// TestClassifyWrites sorts the API server's requests of a tick.
func TestClassifyWrites(t *testing.T) {
	for _, tc := range []struct {
		name        string
		served, own map[string]int64
		// objects, status, events and dryRun are the counts expected;
		// details the object writes listed.
		objects, status, events, dryRun int64
		details                         []string
	}{
		{
			name: "a quiet tick",
			served: map[string]int64{"GET secrets": 40, "LIST secrets": 2, "PATCH helmreleases": 10,
				"PATCH helmrepositories": 1, "PATCH helmreleases/status": 10, "PATCH helmrepositories/status": 1,
				"APPLY deployments dry-run": 10, "PATCH services dry-run": 10, "PUT leases": 7,
				"POST subjectaccessreviews": 3, "POST events": 2},
			own:     map[string]int64{"PATCH helmreleases": 10, "PATCH helmrepositories": 1},
			objects: 0, status: 11, events: 2, dryRun: 20,
		},
		{
			name: "an upgrade",
			served: map[string]int64{"PATCH helmreleases": 11, "POST secrets": 1, "PUT secrets": 1,
				"APPLY deployments": 1, "PATCH helmreleases/status": 2},
			own:     map[string]int64{"PATCH helmreleases": 10},
			objects: 4, status: 2,
			details: []string{"APPLY deployments=1", "PATCH helmreleases=1", "POST secrets=1", "PUT secrets=1"},
		},
		{
			name:    "deletes count",
			served:  map[string]int64{"DELETE secrets": 2, "DELETECOLLECTION configmaps": 1},
			objects: 3,
			details: []string{"DELETE secrets=2", "DELETECOLLECTION configmaps=1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := &HelmResult{NoopTickObjectWrites: 99}
			h.classifyWrites(tc.served, tc.own)
			g.Expect(h.NoopTickObjectWrites).To(Equal(tc.objects))
			g.Expect(h.NoopTickStatusWrites).To(Equal(tc.status))
			g.Expect(h.NoopTickEventWrites).To(Equal(tc.events))
			g.Expect(h.NoopTickDryRunRequests).To(Equal(tc.dryRun))
			g.Expect(h.ObjectWrites).To(Equal(tc.details))
		})
	}
}

// TestHelmRelease checks the HelmRelease of an application.
func TestHelmRelease(t *testing.T) {
	g := NewWithT(t)
	hr := helmRelease("bench-x-3", "bench-x", 3)
	g.Expect(hr.Name).To(Equal("app-3"))
	g.Expect(hr.Labels).To(Equal(map[string]string{runLabel: "bench-x"}))
	g.Expect(hr.GetReleaseName()).To(Equal("app-3"))
	g.Expect(hr.GetStorageNamespace()).To(Equal("bench-x-3"))
	g.Expect(hr.Spec.Chart.Spec.SourceRef.Namespace).To(Equal("bench-x"))
	g.Expect(hr.GetDriftDetectionMode()).To(Equal("enabled"))
	g.Expect(hr.Spec.Interval.Duration).To(Equal(sourceInterval))
	g.Expect(hr.Spec.Chart.Spec.SourceRef.Kind).To(Equal("HelmRepository"))
	g.Expect(hr.Spec.Chart.Spec.SourceRef.Name).To(Equal(helmRepository("bench-x", "http://x").Name))
	g.Expect(hr.Spec.Chart.Spec.Chart).To(Equal(benchChartName))
}
