package notification

import "time"

// Where the suite's TestMain stores the control plane, the controllers'
// logs, the manager's dispatcher, a sink into it, where the webhook Server
// listens and what it reads Receivers from.
var (
	Env        = &env
	Logs       = &logs
	Dispatcher = &dispatcher
	Sink       = &sink
	ServerURL  = &serverURL
	ServedFrom = &servedFrom
)

// Window is the dispatcher's deduplication and folding window in tests.
const Window = window

// Now is the dispatcher's clock in tests.
func Now() time.Time { return clock.Now() }
