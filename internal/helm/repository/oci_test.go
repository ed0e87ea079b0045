package repository

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestPullOCIChart(t *testing.T) {
	host := testutil.StartRegistry(t, user, password)
	push := func(version string) string {
		return helmtest.PushOCI(t, host, "charts/podinfo", helmtest.Chart(t, "podinfo", version),
			helmtest.WithRegistryAuth(user, password))
	}
	digests := map[string]string{}
	for _, v := range []string{"6.4.0", "6.5.0", "6.5.1+build.7", "7.0.0-rc.1"} {
		digests[v] = push(v)
	}
	o := oci.Options{Username: user, Password: password, Insecure: true}
	tests := []struct {
		name         string
		versionRange string
		want         string
		wantErr      error
	}{
		{name: "latest", versionRange: "", want: "6.5.1+build.7"},
		{name: "range", versionRange: "~6.4", want: "6.4.0"},
		{name: "exact", versionRange: "6.5.0", want: "6.5.0"},
		{name: "exact with build metadata", versionRange: "6.5.1+build.7", want: "6.5.1+build.7"},
		{name: "prerelease by range", versionRange: ">=7.0.0-0", want: "7.0.0-rc.1"},
		{name: "no match", versionRange: ">=8", wantErr: ErrVersionNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data, version, digest, err := PullOCIChart(context.Background(), "oci://"+host+"/charts", "podinfo", tt.versionRange, o, 0)
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(version).To(Equal(tt.want))
			g.Expect(digest).To(Equal(digests[tt.want]))
			g.Expect(data).To(Equal(helmtest.Archive(t, helmtest.Chart(t, "podinfo", tt.want))))
		})
	}
}

func TestPullOCIChartFailures(t *testing.T) {
	host := testutil.StartRegistry(t, user, password)
	ch := helmtest.Chart(t, "podinfo", "1.0.0", helmtest.WithFile("blob.bin", randomBytes(64<<10)))
	helmtest.PushOCI(t, host, "charts/podinfo", ch, helmtest.WithRegistryAuth(user, password))
	good := oci.Options{Username: user, Password: password, Insecure: true}
	bad := oci.Options{Username: user, Password: "wrong-" + password, Insecure: true}
	tests := []struct {
		name         string
		chart        string
		versionRange string
		o            oci.Options
		maxSize      int64
		wantErr      error
		wantText     string
	}{
		{name: "wrong password, range", chart: "podinfo", versionRange: "*", o: bad, wantErr: oci.ErrAccessDenied},
		{name: "wrong password, exact", chart: "podinfo", versionRange: "1.0.0", o: bad, wantErr: oci.ErrAccessDenied},
		{name: "over the size limit", chart: "podinfo", versionRange: "1.0.0", o: good, maxSize: 16 << 10, wantErr: oci.ErrTooLarge},
		{name: "no such version", chart: "podinfo", versionRange: "2.0.0", o: good, wantText: "2.0.0"},
		{name: "no such chart", chart: "nginx", versionRange: "*", o: good, wantText: "nginx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, _, err := PullOCIChart(context.Background(), "oci://"+host+"/charts/", tt.chart, tt.versionRange, tt.o, tt.maxSize)
			g.Expect(err).To(HaveOccurred())
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), err.Error())
			}
			g.Expect(err.Error()).To(ContainSubstring(tt.wantText))
			g.Expect(err.Error()).NotTo(ContainSubstring(password))
		})
	}
}

func TestPullOCIChartNotAChart(t *testing.T) {
	g := NewWithT(t)
	host := testutil.StartRegistry(t, "", "")
	ref, err := oci.ParseTag("oci://"+host+"/charts/podinfo:1.0.0", oci.Options{Insecure: true})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = oci.Push(context.Background(), ref, oci.PushRequest{Dir: t.TempDir()}, oci.Options{Insecure: true})
	g.Expect(err).NotTo(HaveOccurred())
	_, _, _, err = PullOCIChart(context.Background(), "oci://"+host+"/charts", "podinfo", "1.0.0", oci.Options{Insecure: true}, 0)
	g.Expect(err).To(MatchError(ContainSubstring("is not a Helm chart")))
}

func TestPullOCIChartExactVersionListsNoTags(t *testing.T) {
	g := NewWithT(t)
	var lists atomic.Int32
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			lists.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	helmtest.PushOCI(t, host, "charts/podinfo", helmtest.Chart(t, "podinfo", "1.0.0"))
	o := oci.Options{Insecure: true}

	_, version, _, err := PullOCIChart(context.Background(), "oci://"+host+"/charts", "podinfo", "1.0.0", o, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(version).To(Equal("1.0.0"))
	g.Expect(lists.Load()).To(BeZero())

	_, _, _, err = PullOCIChart(context.Background(), "oci://"+host+"/charts", "podinfo", "1.x", o, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lists.Load()).To(Equal(int32(1)))
}
