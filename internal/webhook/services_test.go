package webhook

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the services sign with HMAC-SHA1
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// testToken is the Receiver's token in the tests; wrongToken signs forged
// requests.
const (
	testToken  = "s3cr3t-r3ceiver-t0ken"
	wrongToken = "not-the-receiver-token"
)

// service is one Receiver type with a request as its service sends it. The
// payloads follow the examples of each service's webhook documentation.
type service struct {
	typ string
	// body is a payload as the service sends it.
	body string
	// headers returns the headers the service sends with body, signed with
	// (or carrying) token.
	headers func(body []byte, token string) http.Header
	// authHeader is the header carrying the signature or token; empty when
	// the secret path is the only authentication.
	authHeader string
	// event is the Result.Event expected.
	event string
	// filters tells whether spec.events applies to the type.
	filters bool
	// jsonOnly tells whether a body that is not JSON is refused.
	jsonOnly bool
}

// services lists one request per Receiver type.
var services = []service{
	{
		typ:  TypeGeneric,
		body: `{"source":"ci","status":"built"}`,
		headers: func([]byte, string) http.Header {
			return http.Header{"Content-Type": {"application/json"}}
		},
	},
	{
		typ:  TypeGenericHMAC,
		body: `{"source":"ci","status":"built"}`,
		headers: func(body []byte, token string) http.Header {
			return http.Header{"X-Signature": {"sha256=" + hmacHex(sha256.New, token, body)}}
		},
		authHeader: "X-Signature",
	},
	{
		typ: TypeGitHub,
		body: `{"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246",` +
			`"after":"59b20b8d5c6ff8d09518454d4dd8b7a30f095ab5","repository":{"id":1296269,` +
			`"full_name":"octocat/Hello-World","clone_url":"https://github.com/octocat/Hello-World.git"},` +
			`"pusher":{"name":"octocat"},"commits":[]}`,
		headers: func(body []byte, token string) http.Header {
			return http.Header{
				"Content-Type":        {"application/json"},
				"User-Agent":          {"GitHub-Hookshot/044aadd"},
				"X-Github-Event":      {"push"},
				"X-Github-Delivery":   {"72d3162e-cc78-11e3-81ab-4c9367dc0958"},
				"X-Hub-Signature-256": {"sha256=" + hmacHex(sha256.New, token, body)},
			}
		},
		authHeader: "X-Hub-Signature-256", event: "push", filters: true, jsonOnly: true,
	},
	{
		typ: TypeGitLab,
		body: `{"object_kind":"push","event_name":"push","before":"95790bf891e76fee5e1747ab589903a6a1f80f22",` +
			`"after":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7","ref":"refs/heads/master",` +
			`"project":{"path_with_namespace":"mike/diaspora","git_http_url":"http://example.com/mike/diaspora.git"}}`,
		headers: func(_ []byte, token string) http.Header {
			return http.Header{
				"Content-Type":   {"application/json"},
				"X-Gitlab-Event": {"Push Hook"},
				"X-Gitlab-Token": {token},
			}
		},
		authHeader: "X-Gitlab-Token", event: "Push Hook", filters: true, jsonOnly: true,
	},
	{
		typ: TypeBitbucket,
		body: `{"eventKey":"repo:refs_changed","date":"2019-06-17T19:37:57+1000","actor":{"name":"john"},` +
			`"repository":{"slug":"test-repo","project":{"key":"MYPROJECT"}},"changes":[{"refId":"refs/heads/master",` +
			`"fromHash":"f09c8889a2d234985734958795a31589cd91ffda","toHash":"22671f0349857934857983457983475ec39f196b","type":"UPDATE"}]}`,
		headers: func(body []byte, token string) http.Header {
			return http.Header{
				"Content-Type":    {"application/json; charset=utf-8"},
				"X-Event-Key":     {"repo:refs_changed"},
				"X-Request-Id":    {"8e8e8e8e-1111-2222-3333-444455556666"},
				"X-Hub-Signature": {"sha256=" + hmacHex(sha256.New, token, body)},
			}
		},
		authHeader: "X-Hub-Signature", event: "repo:refs_changed", filters: true, jsonOnly: true,
	},
	{
		typ: TypeHarbor,
		body: `{"type":"PUSH_ARTIFACT","occur_at":1680501893,"operator":"admin","event_data":{"resources":[` +
			`{"digest":"sha256:954b378c375d852eb3c63ab88978f640b4348b01c1b3456a024a81536dafbbf4","tag":"v1.0.0",` +
			`"resource_url":"harbor.example.com/library/app:v1.0.0"}],"repository":{"date_created":1680501800,` +
			`"name":"app","namespace":"library","repo_full_name":"library/app","repo_type":"public"}}}`,
		headers: func(_ []byte, token string) http.Header {
			return http.Header{"Content-Type": {"application/json"}, "Authorization": {token}}
		},
		authHeader: "Authorization", event: "PUSH_ARTIFACT", jsonOnly: true,
	},
	{
		typ: TypeDockerHub,
		body: `{"callback_url":"https://registry.hub.docker.com/u/svendowideit/testhook/hook/2141b5bi5i5b02bec211i4eeih0242eg11000a/",` +
			`"push_data":{"pushed_at":1417566161,"pusher":"trustedbuilder","tag":"latest"},` +
			`"repository":{"comment_count":0,"date_created":1417494799,"name":"testhook","namespace":"svendowideit",` +
			`"owner":"svendowideit","repo_name":"svendowideit/testhook","repo_url":"https://registry.hub.docker.com/u/svendowideit/testhook/","status":"Active"}}`,
		headers: func([]byte, string) http.Header {
			return http.Header{"Content-Type": {"application/json"}}
		},
		event: "push", jsonOnly: true,
	},
	{
		typ: TypeQuay,
		body: `{"name":"repository","repository":"dgangaia/test","namespace":"dgangaia","docker_url":"quay.io/dgangaia/test",` +
			`"homepage":"https://quay.io/repository/dgangaia/repository","updated_tags":["latest"]}`,
		headers: func([]byte, string) http.Header {
			return http.Header{"Content-Type": {"application/json"}}
		},
		event: "push", jsonOnly: true,
	},
	{
		typ: TypeNexus,
		body: `{"timestamp":"2016-11-10T23:57:49.664+0000","nodeId":"52905B51-085CCABB-CEBBEAAD-16795588-FC927D93",` +
			`"initiator":"admin/127.0.0.1","repositoryName":"docker-hosted","action":"CREATED",` +
			`"component":{"id":"08909bf0c86cf6c9600aade89e1c5e25","format":"docker","name":"app","version":"1.0.0"}}`,
		headers: func(body []byte, token string) http.Header {
			return http.Header{
				"Content-Type":              {"application/json; charset=UTF-8"},
				"User-Agent":                {"Nexus/3.1.0 (PRO; Linux; x86_64)"},
				"X-Nexus-Webhook-Id":        {"rm:repository:component"},
				"X-Nexus-Webhook-Delivery":  {"7f4a6dde-5c68-4999-bcc0-a62f3fb8ae48"},
				"X-Nexus-Webhook-Signature": {hmacHex(sha1.New, token, body)},
			}
		},
		authHeader: "X-Nexus-Webhook-Signature", event: "rm:repository:component", jsonOnly: true,
	},
	{
		typ: TypeACR,
		body: `{"id":"cb8c3971-9adc-488b-bdd8-43cbb4974ff5","timestamp":"2017-11-17T16:52:01.343145347Z","action":"push",` +
			`"target":{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","size":524,` +
			`"digest":"sha256:80f0d5c8786bb9e621a45ece0db56d11cdc624ad20da9fe62e9d25490f331d7d","length":524,` +
			`"repository":"hello-world","tag":"v1"},"request":{"id":"3cbb6949-7549-4fa1-86cd-a6d5451dffc7",` +
			`"host":"myregistry.azurecr.io","method":"PUT","useragent":"docker/17.09.0-ce"}}`,
		headers: func([]byte, string) http.Header {
			return http.Header{"Content-Type": {"application/json"}}
		},
		event: "push", jsonOnly: true,
	},
	{
		typ: TypeCDEvents,
		body: `{"context":{"version":"0.4.1","id":"271069a8-fc18-44f1-b38f-9d70a1695819","source":"/event/source/123",` +
			`"type":"dev.cdevents.change.merged.0.2.0","timestamp":"2023-03-20T14:27:05.315384Z"},` +
			`"subject":{"id":"mySubject123","source":"/event/source/123","type":"change",` +
			`"content":{"repository":{"id":"cdevents/spec","source":"https://github.com"}}}}`,
		headers: func([]byte, string) http.Header {
			return http.Header{
				"Content-Type":   {"application/json"},
				"Ce-Specversion": {"1.0"},
				"Ce-Id":          {"271069a8-fc18-44f1-b38f-9d70a1695819"},
				"Ce-Source":      {"/event/source/123"},
				"Ce-Type":        {"dev.cdevents.change.merged.0.2.0"},
			}
		},
		event: "dev.cdevents.change.merged.0.2.0", filters: true, jsonOnly: true,
	},
}

// serviceOf returns the service of a type.
func serviceOf(typ string) service {
	for _, s := range services {
		if s.typ == typ {
			return s
		}
	}
	panic("no service " + typ)
}

// hmacHex is the hex HMAC of body keyed by key.
func hmacHex(newHash func() hash.Hash, key string, body []byte) string {
	mac := hmac.New(newHash, []byte(key))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// outcome is what the handler's call to Verify returned, and how many body
// bytes it read.
type outcome struct {
	res  Result
	err  error
	read int64
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}

// newVerifyServer starts a loopback server whose handler calls Verify with
// spec, reports the outcome on the returned channel and answers with
// HTTPStatus.
func newVerifyServer(t *testing.T, spec Spec) (*httptest.Server, <-chan outcome) {
	t.Helper()
	got := make(chan outcome, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		body := &countingBody{ReadCloser: r.Body}
		r.Body = body
		res, err := Verify(r, spec)
		got <- outcome{res: res, err: err, read: body.n}
		w.WriteHeader(HTTPStatus(err))
	})
	return srv, got
}

// newServer starts a loopback HTTP server closed when the test ends.
func newServer(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

// verifyOverHTTP posts body with header to a Verify server for spec and
// returns the outcome and the status code answered.
func verifyOverHTTP(t *testing.T, spec Spec, body io.Reader, header http.Header) (outcome, int) {
	t.Helper()
	srv, got := newVerifyServer(t, spec)
	req, err := http.NewRequest(http.MethodPost, srv.URL+WebhookPath(spec.Token, "app", "default"), body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return <-got, resp.StatusCode
}
