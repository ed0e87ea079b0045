package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Bounds of the tags a response holds.
const (
	// DefaultLimit is how many tags a response holds when the request
	// sets no limit.
	DefaultLimit = 100
	// MaxLimit is the greatest limit a request may set.
	MaxLimit = 1000
)

// PolicyOrder returns the first limit tags of an ImageRepository ordered
// by an ImagePolicy, best first. repoNamespace and repoName name the
// ImageRepository, policy is the request's "<name>" or
// "<namespace>/<name>" (checked to be Kubernetes names), and tags yields
// the stored tags. An error that wraps ErrNotFound is answered 404 (no
// such policy, or one for another repository), ErrBadRequest 400, any
// other 500. The controller provides it.
type PolicyOrder func(ctx context.Context, repoNamespace, repoName, policy string, tags iter.Seq[string], limit int) ([]string, error)

// TagsResponse is the JSON body of a successful request.
type TagsResponse struct {
	// Image is the canonical name of the scanned repository.
	Image string `json:"image"`
	// Revision is the revision of the stored tags.
	Revision string `json:"revision"`
	// Count is how many tags are stored, whatever the page.
	Count int `json:"count"`
	// Tags are the tags of the page, or those the policy orders first.
	Tags []string `json:"tags"`
	// Policy is the policy of the request, if any.
	Policy string `json:"policy,omitempty"`
}

// errorResponse is the JSON body of a failed request.
type errorResponse struct {
	Error string `json:"error"`
}

// NewHandler serves the stored tags read-only:
//
//	GET /images/<namespace>/<name>/tags[?limit=N][&offset=M]
//	GET /images/<namespace>/<name>/tags?policy=<name>|<namespace>/<name>[&limit=N]
//
// Without a policy, the tags come in stored (byte) order from offset
// (default 0), limit of them (default DefaultLimit, at most MaxLimit);
// with one, order gives the first limit of them. Only GET is served
// (405 otherwise); every answer is JSON, an error as {"error": "..."}: 400
// for a malformed path component or parameter, 404 for a repository
// without stored tags or an unknown path. Tags are streamed from disk, so
// no request costs memory in proportion to the number of tags. order may
// be nil; then a policy parameter is refused.
func NewHandler(store *Store, order PolicyOrder) http.Handler {
	return &tagsHandler{store: store, order: order}
}

// tagsHandler is the handler of NewHandler.
type tagsHandler struct {
	store *Store
	order PolicyOrder
}

// tagsQuery is the parsed query of a request.
type tagsQuery struct {
	policy        string
	limit, offset int
}

// ServeHTTP implements http.Handler.
func (h *tagsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeJSON(w, http.StatusMethodNotAllowed, errorResponse{Error: "only GET is served"})
		return
	}
	namespace, name, ok := ParseTagsPath(r.URL.Path)
	if !ok {
		writeJSON(w, http.StatusNotFound, errorResponse{Error: "no such path: ask for /images/<namespace>/<name>/tags"})
		return
	}
	q, err := h.parseQuery(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	resp, err := h.tags(r.Context(), namespace, name, q)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// tags reads the answer to a request from the store.
func (h *tagsHandler) tags(ctx context.Context, namespace, name string, q tagsQuery) (*TagsResponse, error) {
	snap, err := h.store.Open(namespace, name)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	resp := &TagsResponse{Image: snap.Image, Revision: snap.Revision, Count: snap.Count, Policy: q.policy, Tags: []string{}}
	if q.policy == "" {
		resp.Tags = page(snap.All(), q.offset, q.limit)
	} else {
		tags, err := h.order(ctx, namespace, name, q.policy, snap.All(), q.limit)
		if err != nil {
			return nil, fmt.Errorf("ordering the tags by the policy %s: %w", q.policy, err)
		}
		resp.Tags = append(resp.Tags, tags[:min(len(tags), q.limit)]...)
	}
	if err := snap.Err(); err != nil {
		return nil, err
	}
	return resp, nil
}

// page returns limit tags from offset.
func page(tags iter.Seq[string], offset, limit int) []string {
	out := []string{}
	i := 0
	for tag := range tags {
		if i >= offset {
			out = append(out, tag)
			if len(out) == limit {
				break
			}
		}
		i++
	}
	return out
}

// ParseTagsPath returns the namespace and the name of a path
// /images/<namespace>/<name>/tags.
func ParseTagsPath(path string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/"+imagesDir+"/")
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[2] != tagsFileName {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// parseQuery reads policy, limit and offset; the errors wrap
// ErrBadRequest.
func (h *tagsHandler) parseQuery(v url.Values) (tagsQuery, error) {
	q := tagsQuery{policy: v.Get("policy"), limit: DefaultLimit}
	var err error
	if q.limit, err = intParam(v, "limit", DefaultLimit, 1, MaxLimit); err != nil {
		return q, err
	}
	if q.offset, err = intParam(v, "offset", 0, 0, int(^uint(0)>>1)); err != nil {
		return q, err
	}
	if q.policy == "" {
		return q, nil
	}
	switch {
	case h.order == nil:
		return q, fmt.Errorf("%w: policies are not served here", ErrBadRequest)
	case v.Has("offset"):
		return q, fmt.Errorf("%w: offset is for the stored order; with a policy, ask for the first limit tags", ErrBadRequest)
	}
	return q, checkPolicyName(q.policy)
}

// intParam reads an integer parameter between lo and hi, def when absent.
func intParam(v url.Values, key string, def, lo, hi int) (int, error) {
	if !v.Has(key) {
		return def, nil
	}
	n, err := strconv.Atoi(v.Get(key))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s must be an integer from %d to %d", ErrBadRequest, key, lo, hi)
	}
	return n, nil
}

// checkPolicyName checks a policy parameter, <name> or
// <namespace>/<name>.
func checkPolicyName(policy string) error {
	namespace, name, qualified := strings.Cut(policy, "/")
	if !qualified {
		namespace, name = "", namespace
	}
	if (qualified && len(validation.IsDNS1123Label(namespace)) > 0) || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("%w: policy must be <name> or <namespace>/<name>, Kubernetes names", ErrBadRequest)
	}
	return nil
}

// writeError answers err with the status of its class.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
		status = http.StatusBadRequest
	}
	writeJSON(w, status, errorResponse{Error: err.Error()})
}

// writeJSON writes a JSON answer.
func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
