package helm

// Env, Logs and UIAddr are where the suite's TestMain stores the control plane and
// the controllers' logs.
var (
	Env  = &env
	Logs = &logs
	// UIAddr is where the suite's manager serves the web UI.
	UIAddr = &uiAddr
)
