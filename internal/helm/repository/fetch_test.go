package repository

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

const (
	user     = "helm-user"
	password = "s3cretPa55w0rd"
)

// fetchChart fetches the index of repoURL, selects chart name at
// versionRange and downloads it.
func fetchChart(ctx context.Context, repoURL, name, versionRange string, o ClientOptions) ([]byte, error) {
	data, err := FetchIndex(ctx, repoURL, o)
	if err != nil {
		return nil, err
	}
	idx, err := ParseIndex(data)
	if err != nil {
		return nil, err
	}
	cv, err := idx.Get(name, versionRange)
	if err != nil {
		return nil, err
	}
	return DownloadChart(ctx, repoURL, cv, o)
}

func TestFetchIndexAndDownload(t *testing.T) {
	tests := []struct {
		name    string
		opts    []helmtest.RepoOption
		options func(*helmtest.Repo) ClientOptions
		suffix  string
	}{
		{name: "absolute URLs"},
		{name: "relative URLs, URL ending with /", opts: []helmtest.RepoOption{helmtest.WithRelativeURLs()}, suffix: "/"},
		{name: "relative URLs under a path", opts: []helmtest.RepoOption{helmtest.WithRelativeURLs(), helmtest.WithPathPrefix("charts/stable")}},
		{name: "absolute URLs under a path, URL ending with /", opts: []helmtest.RepoOption{helmtest.WithPathPrefix("charts")}, suffix: "/"},
		{name: "basic auth", opts: []helmtest.RepoOption{helmtest.WithBasicAuth(user, password)},
			options: func(*helmtest.Repo) ClientOptions { return ClientOptions{Username: user, Password: password} }},
		{name: "TLS with CA and basic auth", opts: []helmtest.RepoOption{helmtest.WithTLS(), helmtest.WithBasicAuth(user, password)},
			options: func(r *helmtest.Repo) ClientOptions {
				return ClientOptions{Username: user, Password: password, CertData: map[string][]byte{"ca.crt": r.CAPEM()}}
			}},
		{name: "client certificate", opts: []helmtest.RepoOption{helmtest.WithClientCertAuth(), helmtest.WithRelativeURLs()},
			options: func(r *helmtest.Repo) ClientOptions {
				return ClientOptions{CertData: map[string][]byte{"ca.crt": r.CAPEM(), "tls.crt": r.ClientCertPEM(), "tls.key": r.ClientKeyPEM()}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := helmtest.NewRepo(t, tt.opts...)
			want := helmtest.Chart(t, "podinfo", "6.5.0")
			repo.Add(t, want, helmtest.Chart(t, "podinfo", "6.4.0"))
			o := ClientOptions{}
			if tt.options != nil {
				o = tt.options(repo)
			}
			data, err := fetchChart(context.Background(), repo.URL()+tt.suffix, "podinfo", "^6", o)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(data).To(Equal(helmtest.Archive(t, want)))
		})
	}
}

func TestFetchIndexTLSNeedsCA(t *testing.T) {
	g := NewWithT(t)
	repo := helmtest.NewRepo(t, helmtest.WithTLS())
	_, err := FetchIndex(context.Background(), repo.URL(), ClientOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("certificate")))

	other := helmtest.NewRepo(t, helmtest.WithTLS())
	g.Expect(other.CAPEM()).NotTo(Equal(repo.CAPEM()))
	_, err = FetchIndex(context.Background(), repo.URL(), ClientOptions{CertData: map[string][]byte{"ca.crt": other.CAPEM()}})
	g.Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))

	_, err = FetchIndex(context.Background(), repo.URL(), ClientOptions{CertData: map[string][]byte{"ca.crt": []byte("junk")}})
	g.Expect(err).To(MatchError(ContainSubstring("'ca.crt' holds no PEM certificate")))
}

func TestIndexUnchangedMeansSameRevision(t *testing.T) {
	g := NewWithT(t)
	repo := helmtest.NewRepo(t)
	repo.Add(t, helmtest.Chart(t, "a", "1.0.0"))
	revision := func() string {
		data, err := FetchIndex(context.Background(), repo.URL(), ClientOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		idx, err := ParseIndex(data)
		g.Expect(err).NotTo(HaveOccurred())
		norm, err := Normalise(idx)
		g.Expect(err).NotTo(HaveOccurred())
		return Revision(norm)
	}
	first := revision()
	repo.Add(t) // regenerates index.yaml (a new generation time), same charts
	g.Expect(revision()).To(Equal(first))
	repo.Add(t, helmtest.Chart(t, "a", "1.1.0"))
	g.Expect(revision()).NotTo(Equal(first))
	g.Expect(repo.Requests("/index.yaml")).To(Equal(3))
	g.Expect(repo.Requests("/a-1.0.0.tgz")).To(Equal(0), "fetching the index downloads no chart")
}

func TestURLs(t *testing.T) {
	tests := []struct {
		repoURL, ref      string
		wantIndex, wantCh string
		wantErr           bool
	}{
		{repoURL: "https://h/charts", ref: "a-1.tgz", wantIndex: "https://h/charts/index.yaml", wantCh: "https://h/charts/a-1.tgz"},
		{repoURL: "https://h/charts/", ref: "sub/a-1.tgz", wantIndex: "https://h/charts/index.yaml", wantCh: "https://h/charts/sub/a-1.tgz"},
		{repoURL: "https://h", ref: "/abs/a-1.tgz", wantIndex: "https://h/index.yaml", wantCh: "https://h/abs/a-1.tgz"},
		{repoURL: "https://h/c?sig=x", ref: "a-1.tgz", wantIndex: "https://h/c/index.yaml?sig=x", wantCh: "https://h/c/a-1.tgz?sig=x"},
		{repoURL: "https://h/c", ref: "https://cdn.example.com/a-1.tgz", wantIndex: "https://h/c/index.yaml", wantCh: "https://cdn.example.com/a-1.tgz"},
		{repoURL: "https://h/c", ref: "file:///etc/passwd", wantIndex: "https://h/c/index.yaml", wantErr: true},
		{repoURL: "ftp://h/c", ref: "a.tgz", wantErr: true},
		{repoURL: "oci://h/c", ref: "a.tgz", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.repoURL+" "+tt.ref, func(t *testing.T) {
			g := NewWithT(t)
			index, err := IndexURL(tt.repoURL)
			if tt.wantIndex == "" {
				g.Expect(err).To(MatchError(ErrInvalidURL))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(index).To(Equal(tt.wantIndex))
			}
			ch, err := ChartURL(tt.repoURL, tt.ref)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ErrInvalidURL))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ch).To(Equal(tt.wantCh))
		})
	}
}

func TestCredentialsStayOnTheRepositoryOrigin(t *testing.T) {
	tests := []struct {
		name      string
		pass      bool
		wantCreds bool
	}{
		{name: "by default", pass: false, wantCreds: false},
		{name: "with passCredentials", pass: true, wantCreds: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			other := helmtest.NewRepo(t)
			other.Add(t, helmtest.Chart(t, "a", "1.0.0"))
			repo := helmtest.NewRepo(t, helmtest.WithBasicAuth(user, password))
			repo.Handle("/index.yaml", http.RedirectHandler(other.URL()+"/index.yaml", http.StatusFound))
			repo.Handle("/same/index.yaml", http.RedirectHandler("/index2.yaml", http.StatusFound))
			repo.Handle("/index2.yaml", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write(other.Index(t))
			}))
			o := ClientOptions{Username: user, Password: password, PassCredentials: tt.pass}

			// A redirect to another host.
			data, err := FetchIndex(context.Background(), repo.URL(), o)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(other.Requests("/index.yaml")).To(Equal(1))
			g.Expect(hasCreds(other.LastHeader("/index.yaml"))).To(Equal(tt.wantCreds))

			// An absolute chart URL on another host, named by the index.
			idx, err := ParseIndex(data)
			g.Expect(err).NotTo(HaveOccurred())
			cv, err := idx.Get("a", "")
			g.Expect(err).NotTo(HaveOccurred())
			_, err = DownloadChart(context.Background(), repo.URL(), cv, o)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(hasCreds(other.LastHeader("/a-1.0.0.tgz"))).To(Equal(tt.wantCreds))

			// A redirect on the same origin keeps them.
			_, err = FetchIndex(context.Background(), repo.URL()+"/same", o)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(hasCreds(repo.LastHeader("/index2.yaml"))).To(BeTrue())
		})
	}
}

// hasCreds reports whether h carries the test's basic auth.
func hasCreds(h http.Header) bool {
	r := &http.Request{Header: h}
	u, p, ok := r.BasicAuth()
	return ok && u == user && p == password
}

func TestSizeAndTimeLimits(t *testing.T) {
	repo := helmtest.NewRepo(t, helmtest.WithRelativeURLs())
	repo.Add(t, helmtest.Chart(t, "big", "1.0.0", helmtest.WithFile("blob.bin", randomBytes(64<<10))))
	repo.Handle("/huge/index.yaml", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("apiVersion: v1\n#" + strings.Repeat("x", 2<<20)))
	}))
	repo.Handle("/endless/index.yaml", endless(0))
	repo.Handle("/slow/index.yaml", endless(10*time.Millisecond))
	tests := []struct {
		name    string
		path    string
		o       ClientOptions
		chart   bool
		wantErr error
	}{
		{name: "huge index", path: "/huge", o: ClientOptions{MaxIndexSize: 1 << 20}, wantErr: ErrTooLarge},
		{name: "endless index", path: "/endless", o: ClientOptions{MaxIndexSize: 1 << 20}, wantErr: ErrTooLarge},
		{name: "endless index, default limit", path: "/endless", wantErr: ErrTooLarge},
		{name: "slow endless index", path: "/slow", o: ClientOptions{Timeout: 300 * time.Millisecond}, wantErr: context.DeadlineExceeded},
		{name: "chart over the limit", chart: true, o: ClientOptions{MaxChartSize: 16 << 10}, wantErr: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			var err error
			if tt.chart {
				_, err = fetchChart(context.Background(), repo.URL(), "big", "", tt.o)
			} else {
				_, err = FetchIndex(context.Background(), repo.URL()+tt.path, tt.o)
			}
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(time.Since(start)).To(BeNumerically("<", 20*time.Second))
		})
	}
}

// endless streams an index that never ends, a chunk every pause.
func endless(pause time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("apiVersion: v1\n"))
		chunk := []byte("#" + strings.Repeat("x", 4095) + "\n")
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if pause > 0 {
				w.(http.Flusher).Flush()
				time.Sleep(pause)
			}
		}
	})
}

// randomBytes returns n incompressible bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func TestErrorsHoldNoCredentials(t *testing.T) {
	repo := helmtest.NewRepo(t, helmtest.WithBasicAuth(user, password))
	repo.Add(t, helmtest.Chart(t, "a", "1.0.0"))
	repo.Handle("/redirect/index.yaml", http.RedirectHandler("http://127.0.0.1:1/x?token="+password, http.StatusFound))
	userinfoURL := strings.Replace(repo.URL(), "://", "://"+user+":"+password+"@", 1)
	tests := []struct {
		name     string
		repoURL  string
		o        ClientOptions
		wantErr  error
		wantText string
	}{
		{name: "wrong password", repoURL: repo.URL(), o: ClientOptions{Username: user, Password: password + "x"}, wantErr: ErrUnauthorized},
		{name: "no password", repoURL: repo.URL(), wantErr: ErrUnauthorized},
		{name: "userinfo in the URL, nothing listening", repoURL: "http://" + user + ":" + password + "@127.0.0.1:1/charts"},
		{name: "token in the query, not found", repoURL: repo.URL() + "/missing?token=" + password, o: ClientOptions{Username: user, Password: password}},
		{name: "redirect to a URL with a token", repoURL: repo.URL() + "/redirect", o: ClientOptions{Username: user, Password: password},
			wantText: "(redirected to http://127.0.0.1:1/x)"},
		{name: "userinfo in the URL, wrong path", repoURL: userinfoURL + "/nothing"},
		{name: "invalid URL with userinfo", repoURL: "ftp://" + user + ":" + password + "@127.0.0.1/c", wantErr: ErrInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := FetchIndex(context.Background(), tt.repoURL, tt.o)
			g.Expect(err).To(HaveOccurred())
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), err.Error())
			}
			g.Expect(err.Error()).NotTo(ContainSubstring(password))
			g.Expect(err.Error()).NotTo(ContainSubstring(user + ":"))
			g.Expect(err.Error()).To(ContainSubstring("127.0.0.1"), "the error still names the host")
			g.Expect(err.Error()).To(ContainSubstring(tt.wantText))
		})
	}
}
