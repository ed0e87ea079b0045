package helm

// Env and Logs are where the suite's TestMain stores the control plane and
// the controllers' logs.
var (
	Env  = &env
	Logs = &logs
)
