package helmtest_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestChartPackageRoundTrip(t *testing.T) {
	g := NewWithT(t)
	sub := helmtest.Chart(t, "sub", "0.1.0")
	ch := helmtest.Chart(t, "app", "1.2.3",
		helmtest.WithValues(map[string]any{"greeting": "hi"}),
		helmtest.WithAppVersion("9.9"),
		helmtest.WithTemplate("svc.yaml", "kind: Service\n"),
		helmtest.WithFile("crds/crd.yaml", []byte("kind: CustomResourceDefinition\n")),
		helmtest.WithSubchart(sub),
	)
	data := helmtest.Archive(t, ch)
	g.Expect(helmtest.Archive(t, ch)).To(Equal(data), "packaging is deterministic")

	got, err := loader.LoadArchive(bytes.NewReader(data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Metadata.Version).To(Equal("1.2.3"))
	g.Expect(got.Metadata.AppVersion).To(Equal("9.9"))
	g.Expect(got.Values).To(HaveKeyWithValue("greeting", "hi"))
	g.Expect(templateNames(got.Templates)).To(ConsistOf(helmtest.DefaultTemplateName, "templates/svc.yaml"))
	g.Expect(got.Dependencies()).To(HaveLen(1))
	g.Expect(got.CRDObjects()).To(HaveLen(1))

	dir, err := loader.LoadDir(helmtest.WriteDir(t, ch, t.TempDir()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir.Name()).To(Equal("app"))
	g.Expect(dir.Values).To(HaveKeyWithValue("greeting", "hi"))
}

func templateNames(files []*common.File) []string {
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, f.Name)
	}
	return names
}

func TestRepoServesIndexAndCharts(t *testing.T) {
	tests := []struct {
		name string
		opts []helmtest.RepoOption
	}{
		{name: "plain"},
		{name: "relative URLs under a prefix", opts: []helmtest.RepoOption{helmtest.WithRelativeURLs(), helmtest.WithPathPrefix("charts")}},
		{name: "TLS and basic auth", opts: []helmtest.RepoOption{helmtest.WithTLS(), helmtest.WithBasicAuth("user", "s3cret")}},
		{name: "client certificate", opts: []helmtest.RepoOption{helmtest.WithClientCertAuth()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := helmtest.NewRepo(t, tt.opts...)
			ch := helmtest.Chart(t, "podinfo", "6.5.0")
			repo.Add(t, ch, helmtest.Chart(t, "podinfo", "6.4.0"))
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: repo.ClientTLSConfig()}}

			idx := loadIndex(g, get(g, client, repo.URL()+"/index.yaml"))
			cv, err := idx.Get("podinfo", "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cv.Version).To(Equal("6.5.0"))

			chartURL := cv.URLs[0]
			if !strings.HasPrefix(chartURL, "http") {
				chartURL = repo.URL() + "/" + chartURL
			}
			g.Expect(get(g, client, chartURL)).To(Equal(helmtest.Archive(t, ch)))
			u, err := url.Parse(repo.URL() + "/index.yaml")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(repo.Requests(u.Path)).To(Equal(1))
		})
	}
}

func TestRepoRejectsMissingCredentials(t *testing.T) {
	g := NewWithT(t)
	repo := helmtest.NewRepo(t, helmtest.WithBasicAuth("user", "s3cret"))
	resp, err := http.Get(repo.URL() + "/index.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(repo.Requests("/index.yaml")).To(Equal(1))

	tlsRepo := helmtest.NewRepo(t, helmtest.WithClientCertAuth())
	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(tlsRepo.CAPEM())).To(BeTrue())
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, err = noCert.Get(tlsRepo.URL() + "/index.yaml")
	g.Expect(err).To(HaveOccurred(), "a client without certificate is refused")
	_, err = tls.X509KeyPair(tlsRepo.ClientCertPEM(), tlsRepo.ClientKeyPEM())
	g.Expect(err).NotTo(HaveOccurred())
}

func TestRepoHandleAndRemove(t *testing.T) {
	g := NewWithT(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "a", "1.0.0"))
	repo.Handle("/custom", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "custom")
	}))
	g.Expect(string(get(g, http.DefaultClient, repo.URL()+"/custom"))).To(Equal("custom"))
	g.Expect(repo.LastHeader("/custom")).NotTo(BeNil())
	g.Expect(repo.LastHeader("/never")).To(BeNil())

	repo.Remove(t, "a", "1.0.0")
	idx := loadIndex(g, repo.Index(t))
	g.Expect(idx.Entries).To(BeEmpty())
}

func TestPushOCI(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "user", "pass")
	ch := helmtest.Chart(t, "podinfo", "6.5.0+build.1")
	digest := helmtest.PushOCI(t, host, "charts/podinfo", ch, helmtest.WithRegistryAuth("user", "pass"))

	ref, err := name.ParseReference(host+"/charts/podinfo:6.5.0_build.1", name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Get(ref, remote.WithAuth(&authn.Basic{Username: "user", Password: "pass"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc.Digest.String()).To(Equal(digest))
	img, err := desc.Image()
	g.Expect(err).NotTo(HaveOccurred())
	m, err := img.Manifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(m.Config.MediaType)).To(Equal(string(helmtest.OCIConfigMediaType)))
	g.Expect(m.Layers).To(HaveLen(1))
	g.Expect(string(m.Layers[0].MediaType)).To(Equal(string(helmtest.OCIChartMediaType)))
	rc, err := img.LayerByDigest(m.Layers[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := rc.Compressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer r.Close()
	got, err := loader.LoadArchive(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Metadata.Version).To(Equal("6.5.0+build.1"))
}

func get(g Gomega, c *http.Client, url string) []byte {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.SetBasicAuth("user", "s3cret")
	resp, err := c.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), url)
	data, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

func loadIndex(g Gomega, data []byte) *repov1.IndexFile {
	idx := &repov1.IndexFile{}
	g.Expect(yaml.Unmarshal(data, idx)).To(Succeed())
	g.Expect(idx.APIVersion).To(Equal("v1"))
	return idx
}

func TestDefaultTemplateRenders(t *testing.T) {
	tests := []struct {
		name   string
		opts   []helmtest.ChartOption
		values map[string]any
		want   string
	}{
		{name: "chart default", want: `greeting: "hello"`},
		{name: "chart values", opts: []helmtest.ChartOption{helmtest.WithValues(map[string]any{"greeting": "hi"})}, want: `greeting: "hi"`},
		{name: "release values", values: map[string]any{"greeting": "hey"}, want: `greeting: "hey"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch, err := loader.LoadArchive(bytes.NewReader(helmtest.Archive(t, helmtest.Chart(t, "app", "1.0.0", tt.opts...))))
			g.Expect(err).NotTo(HaveOccurred())
			vals, err := chartutil.ToRenderValues(ch, tt.values, common.ReleaseOptions{Name: "rel", Namespace: "ns"}, common.DefaultCapabilities)
			g.Expect(err).NotTo(HaveOccurred())
			out, err := engine.Render(ch, vals)
			g.Expect(err).NotTo(HaveOccurred())
			cm := out["app/"+helmtest.DefaultTemplateName]
			g.Expect(cm).To(ContainSubstring("name: rel-cm"))
			g.Expect(cm).To(ContainSubstring(tt.want))
		})
	}
}
