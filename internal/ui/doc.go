// Package ui serves Windlass's web UI: server-rendered HTML pages of every
// object of every kind in the registry (internal/kinds), read from a
// client.Reader that is, in the controller, the manager's shared informer
// cache, so that a page view makes no request to the API server.
//
// The overview counts each kind's objects by state, lists what needs
// attention with its reason in words and what gates hold back, and lists
// the objects that match its filters (namespace, kind, state, a name). The
// graph draws what feeds what, from gates and sources to the objects the
// appliers applied, laid out on the server. The gates page shows each
// gate's state, why, and its week ahead; the image page the repositories,
// policies and automations. A page per object shows its conditions and
// what its status records: the inventory it applied, its Helm release
// history, a gate's consumers. Changes reaches open pages (server-sent
// events) from the informers.
//
// Actions (reconcile, suspend, resume, gate open and close) are patches
// made as the page's user: with the user's own client (windlass ui, dev),
// or, with SignIn, as the signed-in user by impersonation after a
// SubjectAccessReview, reads then filtered by what the user may list.
//
// The pages use html/template, so that every value is escaped; they show
// conditions and status and the spec's references, never a credential or
// any Secret.
package ui
