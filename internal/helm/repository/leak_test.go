package repository

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

// TestNoLeak_FetchIndexDownloadChartAndPullOCIChart (security row 44)
// fetches indexes and charts, over HTTP, HTTPS and OCI, and fails to, many
// times: FetchIndex of a good index, a missing one (404), one answering
// 500, one over MaxIndexSize and one that stalls past the timeout;
// DownloadChart of a good chart, one over MaxChartSize and a missing one;
// PullOCIChart of a good chart, one over its size limit, a missing chart
// and a wrong password. Afterwards the process holds no more open files
// and goroutines than before (see testutil.ExpectNoLeaks).
func TestNoLeak_FetchIndexDownloadChartAndPullOCIChart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := helmtest.NewRepo(t, helmtest.WithRelativeURLs())
	want := helmtest.Chart(t, "podinfo", "6.5.0")
	repo.Add(t, want, helmtest.Chart(t, "big", "1.0.0", helmtest.WithFile("blob.bin", randomBytes(64<<10))))
	repo.Handle("/broken/index.yaml", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the index broke", http.StatusInternalServerError)
	}))
	repo.Handle("/huge/index.yaml", endless(0))
	repo.Handle("/slow/index.yaml", endless(10*time.Millisecond))
	secure := helmtest.NewRepo(t, helmtest.WithTLS())
	secure.Add(t, want)
	tlsOptions := ClientOptions{CertData: map[string][]byte{"ca.crt": secure.CAPEM()}}

	registry := testutil.StartRegistry(t, user, password)
	helmtest.PushOCI(t, registry, "charts/podinfo", want, helmtest.WithRegistryAuth(user, password))
	good := oci.Options{Username: user, Password: password, Insecure: true}
	bad := oci.Options{Username: user, Password: "wrong-" + password, Insecure: true}

	round := func() {
		data, err := fetchChart(ctx, repo.URL(), "podinfo", "6.5.0", ClientOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(data).To(Equal(helmtest.Archive(t, want)))
		_, err = fetchChart(ctx, secure.URL(), "podinfo", "6.5.0", tlsOptions)
		g.Expect(err).NotTo(HaveOccurred())

		_, err = FetchIndex(ctx, repo.URL()+"/missing", ClientOptions{})
		g.Expect(err).To(MatchError(ContainSubstring("404 Not Found")))
		_, err = FetchIndex(ctx, repo.URL()+"/broken", ClientOptions{})
		g.Expect(err).To(MatchError(ContainSubstring("500 Internal Server Error")))
		_, err = FetchIndex(ctx, repo.URL()+"/huge", ClientOptions{MaxIndexSize: 64 << 10})
		g.Expect(err).To(MatchError(ErrTooLarge))
		_, err = FetchIndex(ctx, repo.URL()+"/slow", ClientOptions{Timeout: 100 * time.Millisecond})
		g.Expect(err).To(MatchError(context.DeadlineExceeded))

		_, err = fetchChart(ctx, repo.URL(), "big", "", ClientOptions{MaxChartSize: 16 << 10})
		g.Expect(err).To(MatchError(ErrTooLarge))
		_, err = DownloadChart(ctx, repo.URL(), &ChartVersion{Name: "gone", Version: "1.0.0", URLs: []string{"gone-1.0.0.tgz"}}, ClientOptions{})
		g.Expect(err).To(MatchError(ContainSubstring("404 Not Found")))

		data, version, _, err := PullOCIChart(ctx, "oci://"+registry+"/charts", "podinfo", "*", good, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(version).To(Equal("6.5.0"))
		g.Expect(data).To(Equal(helmtest.Archive(t, want)))
		_, _, _, err = PullOCIChart(ctx, "oci://"+registry+"/charts", "podinfo", "6.5.0", good, 16)
		g.Expect(err).To(MatchError(oci.ErrTooLarge))
		_, _, _, err = PullOCIChart(ctx, "oci://"+registry+"/charts", "nginx", "*", good, 0)
		g.Expect(err).To(MatchError(ContainSubstring("nginx")))
		_, _, _, err = PullOCIChart(ctx, "oci://"+registry+"/charts", "podinfo", "*", bad, 0)
		g.Expect(errors.Is(err, oci.ErrAccessDenied)).To(BeTrue(), "%v", err)
	}
	// The HTTP repositories share the transports of the package's cache,
	// the OCI registry remote.DefaultTransport: their idle connections are
	// the pools', not a leak.
	closeIdle := func() {
		transports.mu.Lock()
		for el := transports.order.Front(); el != nil; el = el.Next() {
			el.Value.(*transportEntry).t.CloseIdleConnections()
		}
		transports.mu.Unlock()
		remote.DefaultTransport.(*http.Transport).CloseIdleConnections()
	}
	testutil.ExpectNoLeaks(t, g, round, closeIdle)
}
