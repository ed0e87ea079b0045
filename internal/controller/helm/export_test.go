package helm

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
// count the dry runs that drift detection sends (dryRuns) and the lists of
// release Secrets (secretLists).
func CountRequests(rt http.RoundTripper) http.RoundTripper {
	return dryRuns.Wrap(secretLists.Wrap(rt))
}
