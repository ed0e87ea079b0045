package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// getJSON serves a GET of path and decodes the answer, which must have
// the status given.
func getJSON(t *testing.T, h http.Handler, path string, status int) TagsResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	g := NewWithT(t)
	g.Expect(rec.Code).To(Equal(status), rec.Body.String())
	g.Expect(rec.Header().Get("Content-Type")).To(Equal("application/json"))
	var body TagsResponse
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &body)).To(Succeed())
	return body
}

// reverseOrder is the PolicyOrder of the tests: the tags in reverse byte
// order, for the policies "latest" and "apps/latest"; "missing" is not
// found, "refused" a bad request, anything else fails.
func reverseOrder(calls *[]string) PolicyOrder {
	return func(_ context.Context, ns, name, policy string, tags iter.Seq[string], limit int) ([]string, error) {
		*calls = append(*calls, fmt.Sprintf("%s/%s %s %d", ns, name, policy, limit))
		switch policy {
		case "latest", "apps/latest":
			all := slices.Collect(tags)
			slices.Reverse(all)
			return all[:min(limit, len(all))], nil
		case "missing":
			return nil, fmt.Errorf("%w: no ImagePolicy apps/missing", ErrNotFound)
		case "refused":
			return nil, fmt.Errorf("%w: the policy selects another repository", ErrBadRequest)
		}
		return nil, fmt.Errorf("the policy is not ready")
	}
}

func TestHandler(t *testing.T) {
	tags := numbered("h", 250)
	reg, s, res := scanned(t, tags)
	var calls []string
	h := NewHandler(s, reverseOrder(&calls))
	reversed := slices.Clone(tags)
	slices.Reverse(reversed)

	for _, tc := range []struct {
		path      string
		status    int
		want      []string
		wantErr   string
		wantCall  string
		wantCount int
	}{
		{path: "/images/apps/app/tags", status: 200, want: tags[:100]},
		{path: "/images/apps/app/tags?limit=10&offset=245", status: 200, want: tags[245:]},
		{path: "/images/apps/app/tags?offset=100&limit=3", status: 200, want: tags[100:103]},
		{path: "/images/apps/app/tags?offset=1000", status: 200, want: []string{}},
		{path: "/images/apps/app/tags?limit=1000", status: 200, want: tags},
		{path: "/images/apps/app/tags?policy=latest&limit=5", status: 200, want: reversed[:5], wantCall: "apps/app latest 5"},
		{path: "/images/apps/app/tags?policy=apps/latest", status: 200, want: reversed[:100], wantCall: "apps/app apps/latest 100"},
		{path: "/images/apps/app/tags?policy=missing", status: 404, wantErr: "no ImagePolicy apps/missing"},
		{path: "/images/apps/app/tags?policy=refused", status: 400, wantErr: "another repository"},
		{path: "/images/apps/app/tags?policy=broken", status: 500, wantErr: "not ready"},
		{path: "/images/apps/app/tags?policy=latest&offset=3", status: 400, wantErr: "offset"},
		{path: "/images/apps/app/tags?policy=a/b/c", status: 400, wantErr: "policy must be"},
		{path: "/images/apps/app/tags?policy=Bad_Name", status: 400, wantErr: "policy must be"},
		{path: "/images/apps/app/tags?limit=0", status: 400, wantErr: "limit must be an integer from 1 to 1000"},
		{path: "/images/apps/app/tags?limit=1001", status: 400, wantErr: "limit must be"},
		{path: "/images/apps/app/tags?limit=ten", status: 400, wantErr: "limit must be"},
		{path: "/images/apps/app/tags?offset=-1", status: 400, wantErr: "offset must be"},
		{path: "/images/apps/other/tags", status: 404, wantErr: "no tags are stored for apps/other"},
		{path: "/images/other/app/tags", status: 404, wantErr: "no tags are stored"},
		{path: "/images/APPS/app/tags", status: 400, wantErr: "not a DNS-1123 label"},
		{path: "/images/apps/..%2F..%2Fetc/tags", status: 404, wantErr: "no such path"},
		{path: "/images/apps/../tags", status: 400, wantErr: "not a DNS-1123 subdomain"},
		{path: "/images/apps/app/tags/", status: 404, wantErr: "no such path"},
		{path: "/images/apps/app", status: 404, wantErr: "no such path"},
		{path: "/other", status: 404, wantErr: "no such path"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			g := NewWithT(t)
			calls = nil
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			g.Expect(rec.Code).To(Equal(tc.status), rec.Body.String())
			g.Expect(rec.Header().Get("Content-Type")).To(Equal("application/json"))
			if tc.wantErr != "" {
				var body errorResponse
				g.Expect(json.Unmarshal(rec.Body.Bytes(), &body)).To(Succeed())
				g.Expect(body.Error).To(ContainSubstring(tc.wantErr))
				return
			}
			var body TagsResponse
			g.Expect(json.Unmarshal(rec.Body.Bytes(), &body)).To(Succeed())
			g.Expect(body.Tags).To(Equal(tc.want))
			g.Expect(body.Image).To(Equal(reg.image("app")))
			g.Expect(body.Revision).To(Equal(res.Revision))
			g.Expect(body.Count).To(Equal(250))
			if tc.wantCall != "" {
				g.Expect(calls).To(Equal([]string{tc.wantCall}))
				g.Expect(body.Policy).To(Equal(strings.Fields(tc.wantCall)[1]))
			} else {
				g.Expect(calls).To(BeEmpty())
				g.Expect(rec.Body.String()).NotTo(ContainSubstring(`"policy"`))
			}
		})
	}
}

func TestHandlerMethods(t *testing.T) {
	h := NewHandler(newStore(t), nil)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead} {
		g := NewWithT(t)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/images/apps/app/tags", strings.NewReader("x")))
		g.Expect(rec.Code).To(Equal(http.StatusMethodNotAllowed), method)
		g.Expect(rec.Header().Get("Allow")).To(Equal(http.MethodGet))
	}
}

func TestHandlerWithoutPolicies(t *testing.T) {
	g := NewWithT(t)
	_, s, _ := scanned(t, []string{"1"})
	rec := httptest.NewRecorder()
	NewHandler(s, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/images/apps/app/tags?policy=latest", nil))
	g.Expect(rec.Code).To(Equal(http.StatusBadRequest))
	g.Expect(rec.Body.String()).To(ContainSubstring("policies are not served"))
}
