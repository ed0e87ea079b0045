package image

// Env, TagsURL, Store and Logs are where the suite's TestMain stores the
// control plane, the controllers' tags server and tag store, and their
// logs.
var (
	Env     = &env
	TagsURL = &tagsURL
	Store   = &store
	Logs    = &logs
)
