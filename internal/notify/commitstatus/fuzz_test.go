package commitstatus

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/windlass-dev/windlass/internal/notify"
)

// FuzzStatus reads a fuzzed revision as Post does, parses a fuzzed
// address as each commit-status type, and builds the request that sets a
// status with a fuzzed key and description. It asserts that CommitOf
// returns 40 lower-case hex digits that the revision holds; that a request
// goes to the address's host (or the service's API host), at a path with
// no "." or ".." segment that names the commit; that its body is JSON; and
// that the description and the Bitbucket name are within their limits of
// characters, the Bitbucket key within its limit of bytes (the key itself
// when it fits).
func FuzzStatus(f *testing.F) {
	for _, seed := range []struct{ address, revision string }{
		{"https://github.com/org/repo", "main@sha1:" + testSHA},
		{"https://ghe.example.com:8443/org/repo.git", "sha1:" + strings.ToUpper(testSHA)},
		{"https://gitlab.com/group/sub/deeper/repo.git", "main/" + testSHA},
		{"https://gitlab.com/group/repo/-/tree/main", testSHA},
		{"https://example.com/git/org/repo", "latest@sha256:" + testSHA + testSHA[:24]},
		{"https://bitbucket.org/ws/repo", "v1.0.0"},
		{"https://example.com/bitbucket/scm/proj/repo", "main@sha1:" + testSHA},
		{"https://bitbucket.example.com/users/jdoe/repos/repo/browse", "main@sha1:" + testSHA},
		{"https://org@dev.azure.com/org/My%20Project/_git/repo/", "main@sha1:" + testSHA},
		{"https://tfs.example.com/DefaultCollection/project/_git/repo", "a@b@sha1:" + testSHA},
		{"https://github.com/org/%2e%2e", "main@sha1:" + testSHA},
		{"https://github.com/o%2Fx/r%3Fq", "main@sha1:" + testSHA},
	} {
		f.Add(seed.address, seed.revision, "kustomization/apps", "Applied revision main@sha1:"+testSHA, false)
	}
	f.Add("https://gitea.example.com/org/repo", "", strings.Repeat("key", 30), strings.Repeat("ü", 300), true)
	f.Add("https://bitbucket.org/ws/repo", "", strings.Repeat("é", 30), strings.Repeat("x", 140), true)
	f.Fuzz(func(t *testing.T, address, revision, key, description string, failed bool) {
		if sha, ok := CommitOf(revision); ok {
			if len(sha) != sha1HexLen || strings.Trim(sha, "0123456789abcdef") != "" || !strings.Contains(strings.ToLower(revision), sha) {
				t.Fatalf("CommitOf(%q) = %q", revision, sha)
			}
		}
		u, err := notify.CheckAddress(address, notify.Config{}.AddressPolicy())
		if err != nil {
			return
		}
		st := status{key: key, description: description, failed: failed}
		for _, typ := range Types {
			svc, err := serviceTypes[typ].parse(newURLParts(u))
			if err != nil {
				continue
			}
			req := svc.request(testSHA, st)
			ru, err := url.Parse(req.URL)
			if err != nil {
				t.Fatalf("%s: the request's URL %q does not parse: %v", typ, req.URL, err)
			}
			if ru.Host != u.Host && ru.Host != "api.github.com" && ru.Host != "api.bitbucket.org" {
				t.Fatalf("%s: the address %q sends the status to %q", typ, address, req.URL)
			}
			segments := strings.Split(ru.Path, "/")
			if slices.Contains(segments, "..") || slices.Contains(segments, ".") || !slices.Contains(segments, testSHA) {
				t.Fatalf("%s: the address %q sends the status to the path %q", typ, address, ru.Path)
			}
			data, err := json.Marshal(req.Body)
			if err != nil || !json.Valid(data) {
				t.Fatalf("%s: the body does not encode: %v", typ, err)
			}
			limit := descriptionLimit
			if typ == "github" {
				limit = githubDescriptionLimit
			}
			checkLimit(t, typ, "description", req.Body, "description", limit)
			if strings.HasPrefix(typ, "bitbucket") {
				checkLimit(t, typ, "name", req.Body, "name", descriptionLimit)
				k := req.Body.(map[string]string)["key"]
				if len(k) > bitbucketKeyLimit || (len(key) <= bitbucketKeyLimit && k != key) {
					t.Fatalf("%s: the key %q of %q", typ, k, key)
				}
			}
		}
	})
}

// checkLimit fails t when the field of body (a map) is over limit
// characters.
func checkLimit(t *testing.T, typ, what string, body any, field string, limit int) {
	t.Helper()
	var v string
	switch b := body.(type) {
	case map[string]string:
		v = b[field]
	case map[string]any:
		v, _ = b[field].(string)
	default:
		t.Fatalf("%s: a body of type %T", typ, body)
	}
	if n := utf8.RuneCountInString(v); n > limit {
		t.Fatalf("%s: the %s is %d characters, over %d", typ, what, n, limit)
	}
}
