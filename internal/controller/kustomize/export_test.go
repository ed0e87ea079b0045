package kustomize

import "net/http"

// Env and Logs are where the suite's TestMain stores the control plane and
// the controllers' logs.
var (
	Env  = &env
	Logs = &logs
)

// CountDryRuns wraps the transport of the controllers' API requests, to
// count the server-side dry runs (dryRuns).
func CountDryRuns(rt http.RoundTripper) http.RoundTripper { return dryRuns.wrap(rt) }
