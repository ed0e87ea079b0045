package commitstatus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

const (
	testSHA      = "0123456789abcdef0123456789abcdef01234567"
	testToken    = "tok-s3cret-value"
	testPassword = "app-pa55word"
	testText     = "Health check failed for Deployment/apps/web"
)

// recorded is one request the fake API received.
type recorded struct {
	method, path, query string
	header              http.Header
	body                map[string]any
}

// fakeAPI is a loopback HTTPS server standing in for a hosting service.
type fakeAPI struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	code   int
	answer string
}

func newFakeAPI(t *testing.T) *fakeAPI {
	api := &fakeAPI{code: http.StatusCreated}
	api.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		api.mu.Lock()
		api.reqs = append(api.reqs, recorded{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
		code, answer := api.code, api.answer
		api.mu.Unlock()
		w.WriteHeader(code)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(api.Close)
	return api
}

func (a *fakeAPI) requests() []recorded {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]recorded(nil), a.reqs...)
}

func (a *fakeAPI) answerWith(code int, answer string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.code, a.answer = code, answer
}

func (a *fakeAPI) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(a.Certificate())
	return &tls.Config{RootCAs: pool}
}

// message is an event about Kustomization flux-system/apps at revision.
func message(severity, revision string) notify.Message {
	ev := eventv1.Event{
		InvolvedObject:      corev1.ObjectReference{Kind: "Kustomization", Name: "apps", Namespace: "flux-system"},
		Severity:            severity,
		Message:             testText,
		Reason:              "HealthCheckFailed",
		ReportingController: "kustomize-controller",
	}
	if revision != "" {
		ev.Metadata = map[string]string{"kustomize.toolkit.fluxcd.io/revision": revision, "env": "prod"}
	}
	return notify.Message{Event: ev}
}

// serviceCase is one provider type against the fake API.
type serviceCase struct {
	typ string
	// address is the repository URL, on the fake API's host.
	address string
	// cfg sets the credentials.
	cfg func(*notify.Config)
	// path and query the API documents, with testSHA.
	path, query string
	// authHeader and authValue are the credentials as sent.
	authHeader, authValue string
	// failed and succeeded are the state field's values.
	failed, succeeded string
	// key finds the status key in a body; descField names the description.
	key       func(body map[string]any) any
	descField string
	// extra are other fields the body must hold.
	extra map[string]any
}

func field(name string) func(map[string]any) any {
	return func(b map[string]any) any { return b[name] }
}

func withToken(c *notify.Config) { c.Token = testToken }

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func serviceCases(base string) []serviceCase {
	return []serviceCase{{
		typ: "github", address: base + "/org/repo", cfg: withToken,
		path:       "/api/v3/repos/org/repo/statuses/" + testSHA,
		authHeader: "Authorization", authValue: "Bearer " + testToken,
		failed: "failure", succeeded: "success", key: field("context"), descField: "description",
	}, {
		typ: "gitlab", address: base + "/group/sub/repo.git", cfg: withToken,
		path:       "/api/v4/projects/group%2Fsub%2Frepo/statuses/" + testSHA,
		authHeader: "PRIVATE-TOKEN", authValue: testToken,
		failed: "failed", succeeded: "success", key: field("name"), descField: "description",
	}, {
		typ: "gitea", address: base + "/org/repo/", cfg: withToken,
		path:       "/api/v1/repos/org/repo/statuses/" + testSHA,
		authHeader: "Authorization", authValue: "token " + testToken,
		failed: "failure", succeeded: "success", key: field("context"), descField: "description",
	}, {
		typ: "bitbucket", address: "https://bitbucket.org/ws/repo.git",
		cfg:        func(c *notify.Config) { c.BasicUsername, c.Password = "jdoe", testPassword },
		path:       "/2.0/repositories/ws/repo/commit/" + testSHA + "/statuses/build",
		authHeader: "Authorization", authValue: basic("jdoe", testPassword),
		failed: "FAILED", succeeded: "SUCCESSFUL", key: field("key"), descField: "description",
		extra: map[string]any{"name": "kustomization/apps", "url": "https://bitbucket.org/ws/repo/commits/" + testSHA},
	}, {
		typ: "bitbucketserver", address: base + "/scm/proj/repo.git", cfg: withToken,
		path:       "/rest/build-status/1.0/commits/" + testSHA,
		authHeader: "Authorization", authValue: "Bearer " + testToken,
		failed: "FAILED", succeeded: "SUCCESSFUL", key: field("key"), descField: "description",
		extra: map[string]any{"url": base + "/projects/proj/repos/repo/commits/" + testSHA},
	}, {
		typ: "azuredevops", address: base + "/org/project/_git/repo", cfg: withToken,
		path:       "/org/project/_apis/git/repositories/repo/commits/" + testSHA + "/statuses",
		query:      "api-version=7.1",
		authHeader: "Authorization", authValue: basic("", testToken),
		failed: "failed", succeeded: "succeeded", descField: "description",
		key: func(b map[string]any) any {
			ctx, _ := b["context"].(map[string]any)
			return ctx["name"]
		},
		extra: map[string]any{"context": map[string]any{"genre": "fluxcd", "name": "kustomization/apps"}},
	}}
}

// newNotifier builds the notifier of tc against api; Bitbucket Cloud's API
// base, fixed to api.bitbucket.org, is pointed at api.
func newNotifier(t *testing.T, api *fakeAPI, tc serviceCase, expr string) notify.Notifier {
	t.Helper()
	cfg := notify.Config{AllowLoopback: true, Type: tc.typ, Address: tc.address, TLS: api.tlsConfig(), CommitStatusExpr: expr}
	tc.cfg(&cfg)
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if cloud, ok := n.(*notifier).service.(*bitbucketCloud); ok {
		cloud.api = api.URL + "/2.0"
	}
	return n
}

func TestPostErrorThenResolved(t *testing.T) {
	for _, typ := range Types {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			api := newFakeAPI(t)
			tc := casesByType(api.URL)[typ]
			n := newNotifier(t, api, tc, "")

			failure := message(eventv1.SeverityError, "main@sha1:"+testSHA)
			resolved := message(eventv1.SeverityInfo, "main@sha1:"+testSHA)
			resolved.Resolves = true
			g.Expect(n.Post(context.Background(), failure)).To(Succeed())
			g.Expect(n.Post(context.Background(), resolved)).To(Succeed())
			// An OCI digest is not a commit: nothing is sent.
			g.Expect(n.Post(context.Background(), message(eventv1.SeverityInfo, "latest@sha256:"+strings.Repeat("ab", 32)))).To(Succeed())

			reqs := api.requests()
			g.Expect(reqs).To(HaveLen(2))
			for i, want := range []struct{ state, desc string }{
				{tc.failed, testText},
				{tc.succeeded, "Resolved: " + testText},
			} {
				r := reqs[i]
				g.Expect(r.method).To(Equal(http.MethodPost))
				g.Expect(r.path).To(Equal(tc.path))
				g.Expect(r.query).To(Equal(tc.query))
				g.Expect(r.header.Get(tc.authHeader)).To(Equal(tc.authValue))
				g.Expect(r.header.Get("Content-Type")).To(Equal("application/json"))
				g.Expect(r.body).To(HaveKeyWithValue("state", want.state))
				g.Expect(r.body).To(HaveKeyWithValue(tc.descField, want.desc))
				g.Expect(tc.key(r.body)).To(Equal("kustomization/apps"))
				for k, v := range tc.extra {
					g.Expect(r.body).To(HaveKeyWithValue(k, v))
				}
			}
		})
	}
}

func casesByType(base string) map[string]serviceCase {
	out := map[string]serviceCase{}
	for _, tc := range serviceCases(base) {
		out[tc.typ] = tc
	}
	return out
}

func TestPostSkipsEventsWithoutCommit(t *testing.T) {
	for _, revision := range []string{
		"",
		"latest@sha256:" + strings.Repeat("0f", 32),
		"sha256:" + strings.Repeat("0f", 32),
		"6.1.0",
		"main@sha1:0123abc",
	} {
		t.Run(revision, func(t *testing.T) {
			g := NewWithT(t)
			api := newFakeAPI(t)
			n := newNotifier(t, api, casesByType(api.URL)["github"], "")
			g.Expect(n.Post(context.Background(), message(eventv1.SeverityError, revision))).To(Succeed())
			g.Expect(api.requests()).To(BeEmpty())
		})
	}
}

func TestCommitStatusExpr(t *testing.T) {
	alert := map[string]any{"metadata": map[string]any{"name": "on-call"}}
	tests := []struct {
		name    string
		expr    string
		alert   map[string]any
		wantKey string
		wantErr string
	}{
		{name: "event fields", expr: "event.involvedObject.kind + '/' + event.involvedObject.name + '/' + event.metadata.env", wantKey: "Kustomization/apps/prod"},
		{name: "provider", expr: "provider.metadata.name + '/' + provider.spec.type + '/' + event.involvedObject.name", wantKey: "status/gitea/apps"},
		{name: "strings extension", expr: "(event.involvedObject.kind + '-' + event.involvedObject.namespace).lowerAscii()", wantKey: "kustomization-flux-system"},
		{name: "alert given", expr: "alert.metadata.name + '/' + event.involvedObject.name", alert: alert, wantKey: "on-call/apps"},
		{name: "no alert", expr: "has(alert.metadata) ? 'alert' : 'no-alert'", wantKey: "no-alert"},
		{name: "missing key", expr: "event.metadata.cluster", wantErr: "no such key"},
		{name: "dynamic non-string", expr: "event.involvedObject", wantErr: "not a string"},
		{name: "empty", expr: "''", wantErr: "empty"},
		{name: "cost limit", expr: "event.message.split('').map(a, event.message.split('').map(b, event.message.split('').map(c, a + b + c))).size() > 0 ? 'x' : 'y'", wantErr: "cost limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			api := newFakeAPI(t)
			tc := casesByType(api.URL)["gitea"]
			cfg := notify.Config{AllowLoopback: true, Type: "gitea", Address: tc.address, Token: testToken, TLS: api.tlsConfig(),
				CommitStatusExpr: tt.expr, ProviderName: "status", ProviderNamespace: "flux-system"}
			n, err := New(cfg)
			g.Expect(err).NotTo(HaveOccurred())
			ctx := context.Background()
			if tt.alert != nil {
				ctx = WithAlert(ctx, tt.alert)
			}
			err = n.Post(ctx, message(eventv1.SeverityError, "sha1:"+testSHA))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(api.requests()).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(api.requests()).To(HaveLen(1))
			g.Expect(api.requests()[0].body).To(HaveKeyWithValue("context", tt.wantKey))
		})
	}
}

func TestNewRefusesBadExpressions(t *testing.T) {
	for expr, want := range map[string]string{
		"event.involvedObject.name +":   "Syntax error",
		"1 + 2":                         "yields int, not a string",
		"obj.name":                      "undeclared reference to 'obj'",
		"event.message.frobnicate('x')": "undeclared reference to 'frobnicate'",
	} {
		t.Run(expr, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(notify.Config{AllowLoopback: true, Type: "github", Address: "https://github.com/org/repo", Token: testToken, CommitStatusExpr: expr})
			g.Expect(err).To(MatchError(ContainSubstring("invalid commitStatusExpr")))
			g.Expect(err).To(MatchError(ContainSubstring(want)))
		})
	}
}

func TestServerErrorHidesCredentials(t *testing.T) {
	for _, typ := range Types {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			api := newFakeAPI(t)
			api.answerWith(http.StatusInternalServerError, "internal error")
			tc := casesByType(api.URL)[typ]
			tc.address = strings.Replace(tc.address, "https://", "https://user:addr-pa55@", 1)
			n := newNotifier(t, api, tc, "")
			err := n.Post(context.Background(), message(eventv1.SeverityError, "sha1:"+testSHA))
			g.Expect(err).To(HaveOccurred())
			var se *notify.StatusError
			g.Expect(errors.As(err, &se)).To(BeTrue())
			g.Expect(se.Code).To(Equal(http.StatusInternalServerError))
			g.Expect(se.Retryable()).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring("internal error"))
			for _, secret := range []string{testToken, testPassword, "addr-pa55", base64.StdEncoding.EncodeToString([]byte(":" + testToken))} {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			}
			// The address's userinfo is never sent to the API.
			g.Expect(api.requests()).To(HaveLen(1))
			g.Expect(api.requests()[0].header.Get(tc.authHeader)).To(Equal(tc.authValue))
		})
	}
}

func TestGitLabStatusAlreadySet(t *testing.T) {
	tests := []struct {
		answer  string
		wantErr bool
	}{
		{answer: `{"message":"Cannot transition status via :run from :running"}`},
		{answer: `{"message":"state is invalid"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			g := NewWithT(t)
			api := newFakeAPI(t)
			api.answerWith(http.StatusBadRequest, tt.answer)
			n := newNotifier(t, api, casesByType(api.URL)["gitlab"], "")
			err := n.Post(context.Background(), message(eventv1.SeverityInfo, "sha1:"+testSHA))
			g.Expect(err != nil).To(Equal(tt.wantErr), "error: %v", err)
			g.Expect(api.requests()).To(HaveLen(1))
		})
	}
}

func TestFieldLimits(t *testing.T) {
	g := NewWithT(t)
	api := newFakeAPI(t)
	long := message(eventv1.SeverityError, "sha1:"+testSHA)
	long.Message = strings.Repeat("é", 300)
	long.Folded = 3

	gh := newNotifier(t, api, casesByType(api.URL)["github"], "")
	g.Expect(gh.Post(context.Background(), long)).To(Succeed())
	desc := api.requests()[0].body["description"].(string)
	g.Expect([]rune(desc)).To(HaveLen(githubDescriptionLimit))
	g.Expect(desc).To(HaveSuffix("…"))

	longKey := "'kustomization/' + event.involvedObject.name + '/a-rather-long-cluster-name'"
	bb := newNotifier(t, api, casesByType(api.URL)["bitbucketserver"], longKey)
	g.Expect(bb.Post(context.Background(), long)).To(Succeed())
	body := api.requests()[1].body
	g.Expect(body["name"]).To(Equal("kustomization/apps/a-rather-long-cluster-name"))
	g.Expect(body["key"]).To(MatchRegexp("^[0-9a-f]{40}$"))
	g.Expect([]rune(body["description"].(string))).To(HaveLen(descriptionLimit))
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     notify.Config
		wantErr string
	}{
		{name: "unknown type", cfg: notify.Config{AllowLoopback: true, Type: "slack", Address: "https://github.com/o/r", Token: "t"}, wantErr: "not a commit-status type"},
		{name: "no token", cfg: notify.Config{AllowLoopback: true, Type: "github", Address: "https://github.com/o/r"}, wantErr: "no token"},
		{name: "gitlab no token", cfg: notify.Config{AllowLoopback: true, Type: "gitlab", Address: "https://gitlab.com/g/r", Password: "p"}, wantErr: "no token"},
		{name: "azure no token", cfg: notify.Config{AllowLoopback: true, Type: "azuredevops", Address: "https://dev.azure.com/o/p/_git/r", BasicUsername: "u", Password: "p"}, wantErr: "no token"},
		{name: "bitbucket no credentials", cfg: notify.Config{AllowLoopback: true, Type: "bitbucket", Address: "https://bitbucket.org/w/r", BasicUsername: "u"}, wantErr: "no credentials"},
		{name: "bitbucketserver no credentials", cfg: notify.Config{AllowLoopback: true, Type: "bitbucketserver", Address: "https://bb.example.com/scm/p/r"}, wantErr: "no credentials"},
		{name: "link-local", cfg: notify.Config{AllowLoopback: true, Type: "gitea", Address: "https://169.254.169.254/o/r", Token: "t"}, wantErr: "link-local"},
		{name: "not a URL", cfg: notify.Config{AllowLoopback: true, Type: "github", Address: "git@github.com:o/r.git", Token: "t"}, wantErr: "invalid address"},
		{name: "bad path, address redacted", cfg: notify.Config{AllowLoopback: true, Type: "github", Address: "https://u:addr-pa55@github.com/o", Token: "t"}, wantErr: `github address "https://github.com/o": want`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(tt.cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("addr-pa55"))
		})
	}
	g := NewWithT(t)
	_, err := New(notify.Config{AllowLoopback: true, Type: "gitea", Address: "https://169.254.169.254/o/r", Token: "t", AllowLinkLocal: true})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestBitbucketCloudAuth(t *testing.T) {
	tests := []struct {
		name string
		cfg  notify.Config
		want string
	}{
		{name: "username and password", cfg: notify.Config{AllowLoopback: true, BasicUsername: "jdoe", Password: "pw", Token: "ignored"}, want: basic("jdoe", "pw")},
		{name: "token user:app-password", cfg: notify.Config{AllowLoopback: true, Token: "jdoe:pw"}, want: basic("jdoe", "pw")},
		{name: "access token", cfg: notify.Config{AllowLoopback: true, Token: "ATCTT3xF"}, want: "Bearer ATCTT3xF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h, err := bitbucketCloudAuth(tt.cfg)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h).To(Equal(map[string]string{"Authorization": tt.want}))
		})
	}
}
