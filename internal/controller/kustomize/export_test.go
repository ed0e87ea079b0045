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

// CountDryRuns wraps the transport of the controllers' API requests, to
// count the server-side dry runs (dryRuns).
func CountDryRuns(rt http.RoundTripper) http.RoundTripper { return dryRuns.wrap(rt) }
