package kustomize

import "net/http"

// Env, Logs and UIAddr are where the suite's TestMain stores the control plane and
// the controllers' logs.
var (
	Env  = &env
	Logs = &logs
	// UIAddr is where the suite's manager serves the web UI.
	UIAddr = &uiAddr
)

// CountRequests wraps the transport of the controllers' API requests, to
// count the server-side dry runs (dryRuns), applies (applies) and reads
// (reads).
func CountRequests(rt http.RoundTripper) http.RoundTripper {
	return reads.Wrap(applies.Wrap(dryRuns.Wrap(rt)))
}
