// Package ui serves Windlass's web UI: server-rendered HTML pages of every
// object of every kind in the registry (internal/kinds), read from a
// client.Reader that is, in the controller, the manager's shared informer
// cache, so that a page view makes no request to the API server.
//
// The overview counts each kind's objects by state, lists what needs
// attention with its reason in words and what gates hold back, and lists
// the objects that match its filters (namespace, kind, state, a name). A
// page per object shows its conditions and what its status records: the
// inventory it applied, its Helm release history.
//
// The pages use html/template, so that every value is escaped; they show
// conditions and status, never a spec's values or any Secret.
package ui
