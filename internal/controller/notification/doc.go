// Package notification holds the notification controller: Alerts and
// Receivers.
//
// # Alerts
//
// The Alert side turns each Alert (notification.toolkit.fluxcd.io/v1beta3) and the
// Provider it names, with the Provider's Secrets, into one rule of a
// dispatch.Dispatcher, and keeps the rule in step with them.
//
// v1beta3 Alerts and Providers have no status, so AlertReconciler is a
// plain controller-runtime reconciler rather than a kind of the
// internal/reconcile Runner, whose job is to write Ready, Reconciling and
// Stalled: here a problem (a missing Provider or Secret, an invalid
// Provider or Alert) is a Warning event on the Alert, and the Alert's rule
// is removed until it is fixed. The rules live in memory, so an Alert
// needs no finalizer: when it is gone, its rule is deleted.
//
// The events of the controllers reach the Dispatcher through
// forward.Sink (internal/notify/forward), the Sink of each controller's
// event.Recorder; this package adds no other sink.
//
// # Receivers
//
// The package also holds the controller side of Receivers
// (notification.toolkit.fluxcd.io/v1): the reconciler, which reads each
// Receiver's token and publishes its webhook path in status.webhookPath,
// and the Server, which serves those paths.
//
// A request to a webhook path goes through these checks, in order, before
// anything changes in the cluster:
//
//  0. fewer than 64 requests are being served (429 with a Retry-After
//     otherwise);
//  1. the method is POST (405 otherwise) and the path is a Receiver's
//     status.webhookPath, found in the manager's cache by the
//     WebhookPathIndexKey index; the path must also be the one the
//     Receiver's current token gives, so that rotating the token revokes
//     the old path at once (404 otherwise, the same answer as for a path
//     that never existed);
//  2. the Receiver is not suspended and is Ready (503 otherwise);
//  3. internal/webhook.Verify checks the body's size, then the signature
//     or token of the Receiver's type, then parses the event (401, 413,
//     400 from webhook.HTTPStatus); a ping or an event not listed in
//     spec.events is answered 200 and does nothing;
//  4. a request signed with a time (generic-hmac's X-Signature-Timestamp)
//     is refused when its time is more than 5 minutes away or when it was
//     taken before (401), by a webhook.ReplayGuard per Receiver (429 when
//     a Receiver is sent more than it remembers).
//
// Then each spec.resources entry selects objects by kind, name (or '*'
// with matchLabels) and namespace, spec.resourceFilter (CEL over res, the
// object's apiVersion, kind and metadata, and req, the JSON payload) keeps
// some of them, and each is annotated with reconcile.fluxcd.io/requestedAt
// by a merge patch of its metadata. A Gate (gating.toolkit.fluxcd.io) is
// also annotated with open.gate.fluxcd.io/requestedAt or
// close.gate.fluxcd.io/requestedAt, per the resource's action, as
// `windlass gate open|close` does. A Receiver opens a Gate only on a
// request signed with a time (so a captured request cannot open it again),
// and acts on a Gate of another namespace only when the Gate lists it in
// spec.allowedReceivers. No answer, event, condition or log
// holds the token or the body.
package notification
