package comment

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// forgeServer is a loopback HTTPS server that implements the few
// endpoints of the three forges' APIs that the comment types use, over
// one repository acme/app, keeping comments in memory. A request without
// the expected credentials is answered 401 and counted.
type forgeServer struct {
	*httptest.Server
	auth       [2]string // header and value every request must carry
	mu         sync.Mutex
	comments   map[string][]comment // by pull request number
	nextID     int64
	edits      []string // the method and path of each edit
	creates    int
	unauthored int
	// pulls are the pull requests of commitSHA, as the forge lists them.
	pulls []map[string]any
}

// commitSHA is the commit the server knows pull requests of.
const commitSHA = "731f7eaddfb6af01cb2173e18f0f75b0ba780ef1"

var (
	listPath   = regexp.MustCompile(`^/api/v\d/(?:repos/acme/app/issues|projects/acme%2Fapp/merge_requests)/(\d+)/(?:comments|notes)$`)
	editPath   = regexp.MustCompile(`^/api/v\d/(?:repos/acme/app/issues/comments/(\d+)|projects/acme%2Fapp/merge_requests/\d+/notes/(\d+))$`)
	pullsPath  = regexp.MustCompile(`^/api/v\d/(?:repos/acme/app/commits/([0-9a-f]{40})/pulls?|projects/acme%2Fapp/repository/commits/([0-9a-f]{40})/merge_requests)$`)
	pageParams = []string{"per_page", "limit"}
)

func newForgeServer(t *testing.T, auth [2]string, pulls []map[string]any) *forgeServer {
	f := &forgeServer{auth: auth, comments: map[string][]comment{}, nextID: 1000, pulls: pulls}
	f.Server = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// seed adds n comments of someone else to pull request number.
func (f *forgeServer) seed(number string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range n {
		f.nextID++
		f.comments[number] = append(f.comments[number], comment{ID: f.nextID, Body: fmt.Sprintf("LGTM %d", i)})
	}
}

func (f *forgeServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get(f.auth[0]) != f.auth[1] {
		f.unauthored++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	path := r.URL.EscapedPath()
	switch {
	case listPath.MatchString(path):
		f.list(w, r, listPath.FindStringSubmatch(path)[1])
	case editPath.MatchString(path) && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
		groups := editPath.FindStringSubmatch(path)
		f.edit(w, r, groups[1]+groups[2])
	case pullsPath.MatchString(path) && r.Method == http.MethodGet:
		groups := pullsPath.FindStringSubmatch(path)
		f.pullsOf(w, path, groups[1]+groups[2])
	default:
		http.Error(w, "no route "+r.Method+" "+path, http.StatusNotFound)
	}
}

// list answers GET (a page of comments) and POST (a new comment).
func (f *forgeServer) list(w http.ResponseWriter, r *http.Request, number string) {
	if r.Method == http.MethodPost {
		body, ok := decodeBody(w, r)
		if !ok {
			return
		}
		f.nextID++
		f.creates++
		f.comments[number] = append(f.comments[number], comment{ID: f.nextID, Body: body})
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(comment{ID: f.nextID, Body: body})
		return
	}
	size := 30
	for _, p := range pageParams {
		if v, err := strconv.Atoi(r.URL.Query().Get(p)); err == nil {
			size = v
		}
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	all := f.comments[number]
	start := min(len(all), (max(page, 1)-1)*size)
	_ = json.NewEncoder(w).Encode(append([]comment{}, all[start:min(len(all), start+size)]...))
}

// edit answers PATCH or PUT of a comment.
func (f *forgeServer) edit(w http.ResponseWriter, r *http.Request, id string) {
	body, ok := decodeBody(w, r)
	if !ok {
		return
	}
	for number, list := range f.comments {
		for i, c := range list {
			if strconv.FormatInt(c.ID, 10) == id {
				f.comments[number][i].Body = body
				f.edits = append(f.edits, r.Method+" "+r.URL.EscapedPath())
				_ = json.NewEncoder(w).Encode(f.comments[number][i])
				return
			}
		}
	}
	http.Error(w, "no comment "+id, http.StatusNotFound)
}

// pullsOf answers the pull requests of a commit: a list, or on Gitea's
// path (".../pull") the first one, 404 when there is none.
func (f *forgeServer) pullsOf(w http.ResponseWriter, path, sha string) {
	var pulls []map[string]any
	if sha == commitSHA {
		pulls = f.pulls
	}
	if strings.HasSuffix(path, "/pull") {
		if len(pulls) == 0 {
			http.Error(w, `{"message":"pull request does not exist"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(pulls[0])
		return
	}
	_ = json.NewEncoder(w).Encode(append([]map[string]any{}, pulls...))
}

func decodeBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	data, _ := io.ReadAll(r.Body)
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.Unmarshal(data, &in); err != nil || in.Body == nil || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "want a JSON body with a body", http.StatusBadRequest)
		return "", false
	}
	return *in.Body, true
}

// ours returns the comments of pull request number that carry a marker.
func (f *forgeServer) ours(number string) []comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []comment
	for _, c := range f.comments[number] {
		if strings.HasPrefix(c.Body, "<!-- windlass:notification ") {
			out = append(out, c)
		}
	}
	return out
}

// tlsConfig trusts the server.
func (f *forgeServer) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(f.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
