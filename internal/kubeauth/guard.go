package kubeauth

import (
	"encoding/json"
	"fmt"
	"net/http"

	authzv1 "k8s.io/api/authorization/v1"
)

// Guard serves a handler only to the callers that authenticate and may
// do what their request needs; it answers the others with a JSON error,
// {"error": "..."}, before anything of the request is read.
type Guard struct {
	// Tokens authenticates the callers.
	Tokens *TokenReviewer
	// Access decides what they may do.
	Access *AccessReviewer
	// Needs returns what a request needs the caller to be allowed (none:
	// only authentication); a request it cannot tell is passed on for the
	// handler to refuse.
	Needs func(r *http.Request) []authzv1.ResourceAttributes
	// Realm names the endpoint in WWW-Authenticate.
	Realm string
}

// Wrap returns next behind g.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, status := g.Tokens.Authenticate(r.Context(), r)
		if status == http.StatusOK && g.Needs != nil {
			for _, attrs := range g.Needs(r) {
				if status = g.Access.Allowed(r.Context(), user, attrs); status == http.StatusForbidden {
					refuse(w, status, g.Realm, fmt.Sprintf("%s may not %s %s in the namespace %q",
						user.Username, attrs.Verb, attrs.Resource, attrs.Namespace))
					return
				}
				if status != http.StatusOK {
					break
				}
			}
		}
		if status != http.StatusOK {
			refuse(w, status, g.Realm, "")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request refused with status, saying why when why is
// not empty.
func refuse(w http.ResponseWriter, status int, realm, why string) {
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", realm))
		why = "send a bearer token of a user or service account of the cluster (Authorization: Bearer TOKEN)"
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	if why == "" {
		why = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": why})
}
