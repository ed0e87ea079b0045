package forward

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// authRecorder is an event endpoint that records the Authorization header
// of each request.
type authRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (a *authRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, r.Header.Get("Authorization"))
	w.WriteHeader(http.StatusAccepted)
}

func (a *authRecorder) headers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// recordingPoster starts a Poster with token to a new authRecorder.
func recordingPoster(t *testing.T, token TokenSource, logs *testutil.Logs) (*Poster, *authRecorder) {
	t.Helper()
	rec := &authRecorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	p := &Poster{Sink: Sink{Scheme: scheme.New(), Controller: "kustomize-controller"}, URL: srv.URL, Token: token,
		Log: zap.New(zap.WriteTo(logs))}
	startPoster(t, p)
	return p, rec
}

func postOne(p *Poster) {
	p.Forward(context.Background(), kustomization(metav1.ConditionFalse), event.Event{Type: event.TypeWarning, Reason: "R", Message: "m"})
}

// TestPosterSendsItsToken: a Poster sends its token as a bearer token.
func TestPosterSendsItsToken(t *testing.T) {
	g := NewWithT(t)
	p, rec := recordingPoster(t, StaticToken("a.b.c"), &testutil.Logs{})
	postOne(p)
	g.Eventually(rec.headers).Should(Equal([]string{"Bearer a.b.c"}))
}

// TestPosterReadsRotatedToken: a Poster reading a token file sends the
// new token once the file is rotated.
func TestPosterReadsRotatedToken(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "token")
	g.Expect(os.WriteFile(file, []byte("first.token.x\n"), 0o600)).To(Succeed())
	p, rec := recordingPoster(t, &TokenFile{Path: file}, &testutil.Logs{})
	postOne(p)
	g.Eventually(rec.headers).Should(HaveLen(1))
	rotated := filepath.Join(filepath.Dir(file), "token.new")
	g.Expect(os.WriteFile(rotated, []byte("second.token.x\n"), 0o600)).To(Succeed())
	later := time.Now().Add(time.Minute)
	g.Expect(os.Chtimes(rotated, later, later)).To(Succeed())
	g.Expect(os.Rename(rotated, file)).To(Succeed())
	postOne(p)
	g.Eventually(rec.headers).Should(Equal([]string{"Bearer first.token.x", "Bearer second.token.x"}))
}

// TestPosterWithoutTokenSaysSo: a Poster with no token logs once that the
// endpoint will refuse its events, and posts them anyway.
func TestPosterWithoutTokenSaysSo(t *testing.T) {
	g := NewWithT(t)
	logs := &testutil.Logs{}
	p, rec := recordingPoster(t, nil, logs)
	postOne(p)
	postOne(p)
	g.Eventually(rec.headers).Should(Equal([]string{"", ""}))
	g.Expect(strings.Count(logs.String(), "will refuse")).To(Equal(1))
}

// TestTokenFromConfig: a rest config's token file wins over its token;
// without either, the pod's service-account token, when there is one.
func TestTokenFromConfig(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	file, inCluster := filepath.Join(dir, "token"), filepath.Join(dir, "in-cluster")
	g.Expect(os.WriteFile(file, []byte("from.the.file"), 0o600)).To(Succeed())
	src := tokenFromConfig(&rest.Config{BearerToken: "from.the.config", BearerTokenFile: file}, inCluster)
	g.Expect(src.Token()).To(Equal("from.the.file"))
	src = tokenFromConfig(&rest.Config{BearerToken: "from.the.config"}, inCluster)
	g.Expect(src.Token()).To(Equal("from.the.config"))
	g.Expect(tokenFromConfig(&rest.Config{}, inCluster)).To(BeNil())
	g.Expect(os.WriteFile(inCluster, []byte("from.the.pod\n"), 0o600)).To(Succeed())
	src = tokenFromConfig(&rest.Config{}, inCluster)
	g.Expect(src.Token()).To(Equal("from.the.pod"))
	g.Expect(os.WriteFile(inCluster, nil, 0o600)).To(Succeed())
	_, err := src.Token()
	g.Expect(err).To(MatchError(ContainSubstring("is empty")))
}
