package shard

import (
	"net/http"
	"net/http/httputil"
	"net/url"
)

// ForwardedHeader marks a request that a replica forwarded to the holder
// of what it asks about: it is answered where it arrives, never forwarded
// again (two replicas whose caches disagree for a moment do not bounce it).
const ForwardedHeader = "X-Windlass-Forwarded"

// Forward returns next, but a request for which locate returns the base
// URL of another replica is passed to that replica, headers and all (its
// bearer token is checked there), and its answer returned: every replica
// serves what only the holder of an object knows (the scanned tags of an
// ImageRepository, say). locate returns "" for a request this replica
// answers itself.
func Forward(next http.Handler, locate func(r *http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) != "" {
			next.ServeHTTP(w, r)
			return
		}
		base := locate(r)
		if base == "" {
			next.ServeHTTP(w, r)
			return
		}
		target, err := url.Parse(base)
		if err != nil {
			http.Error(w, "the replica that holds this object has no valid address", http.StatusBadGateway)
			return
		}
		proxy := &httputil.ReverseProxy{Rewrite: func(p *httputil.ProxyRequest) {
			p.SetURL(target)
			p.Out.Header.Set(ForwardedHeader, "1")
		}}
		proxy.ServeHTTP(w, r)
	})
}
