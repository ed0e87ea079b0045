// Package kubeauth guards Windlass's own HTTP endpoints with the API
// server's authentication and authorization: a caller's bearer token is
// checked by a TokenReview (TokenReviewer), what it asks for by a
// SubjectAccessReview of the user it authenticates as (AccessReviewer),
// and Guard puts both in front of a handler. Every verdict is kept for a
// while in a bounded cache, under a hash, and the reviews of what is not
// kept are rate-limited: a flood of made-up requests costs the API server
// a few reviews a second.
package kubeauth
