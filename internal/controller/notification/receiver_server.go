package notification

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/httpserver"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// WebhookPathIndexKey indexes Receivers by status.webhookPath in the
// manager's cache, so that the Server finds a request's Receiver without
// asking the API server.
const WebhookPathIndexKey = "status.webhookPath"

// Event reasons of the Server, on the Receiver a request is for. The
// reasons differ by outcome: Kubernetes folds the events of one object
// with the same reason into one.
const (
	// WebhookHandledReason: a request was verified and the objects it
	// selects were asked to reconcile.
	WebhookHandledReason = "WebhookHandled"
	// WebhookSkippedReason: a request was verified, but asks for nothing
	// (a ping, or an event not in spec.events).
	WebhookSkippedReason = "WebhookSkipped"
	// WebhookRefusedReason: a request was refused: a bad signature or
	// token, a body too large, a payload not of the service's shape.
	WebhookRefusedReason = "WebhookRefused"
	// WebhookFailedReason: some of the objects a verified request selects
	// could not be asked to reconcile.
	WebhookFailedReason = "WebhookFailed"
)

// requestTimeout bounds the work of one request, after its body is read.
const requestTimeout = 30 * time.Second

// digestLength is the length of the hex SHA-256 at the end of a path.
const digestLength = 64

// WebhookServer serves the webhooks of Receivers at their status.webhookPath:
// POST /hook/<digest> (see the package documentation for the checks and
// the answers). It is a manager.Runnable that every replica runs: reading
// Receivers from the cache and annotating objects is safe from any number
// of replicas at once.
type WebhookServer struct {
	// Client reads Receivers from the manager's cache (by the
	// WebhookPathIndexKey index), reads their Secrets (the manager's
	// client reads Secrets from the API), selects objects by their
	// metadata and patches their annotations.
	Client client.Client
	// Targets, when set, selects the objects to annotate instead of
	// Client: the API server, when the replicas share the objects
	// (--shards=auto) and each caches only its share of some kinds.
	Targets client.Reader
	// Events records, on the Receiver, each request handled or refused.
	Events *event.Recorder
	// Addr is the address to listen on, such as ":9292".
	Addr string
	// NoCrossNamespaceRefs refuses resources in another namespace than
	// the Receiver's.
	NoCrossNamespaceRefs bool
	// Now is the clock of the request annotations and of the times of
	// signed requests; nil means time.Now.
	Now func() time.Time

	filters filterCache
	replays webhook.ReplayGuard
	// inFlight holds a token per request being served: at most
	// maxInFlight, the others are answered 429 at once.
	inFlight chan struct{}
	once     sync.Once
}

// maxInFlight bounds the requests served at once (each may hold a body of
// webhook.MaxBodyBytes): past it, a request is answered 429 with a
// Retry-After, which every webhook service retries.
const maxInFlight = 64

// IndexWebhookPath registers the WebhookPathIndexKey index of Receivers
// with indexer (the manager's field indexer, before the manager starts).
func IndexWebhookPath(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &notificationv1.Receiver{}, WebhookPathIndexKey, func(o client.Object) []string {
		if path := o.(*notificationv1.Receiver).Status.WebhookPath; path != "" {
			return []string{path}
		}
		return nil
	})
}

// SetupWithManager registers the WebhookPathIndexKey index with mgr and adds
// the Server to it, to serve while mgr runs.
func (s *WebhookServer) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := IndexWebhookPath(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return mgr.Add(s)
}

// NeedLeaderElection is false: every replica serves webhooks, so that a
// Service in front of them may send a request to any.
func (s *WebhookServer) NeedLeaderElection() bool { return false }

// Start serves until ctx is done, then lets the requests under way finish
// (for up to 10 seconds).
func (s *WebhookServer) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("serving Receiver webhooks on %s: %w", s.Addr, err)
	}
	log := ctrl.LoggerFrom(ctx).WithName("receiver-server")
	base := ctrl.LoggerInto(context.WithoutCancel(ctx), log)
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      requestTimeout + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	log.Info("Serving Receiver webhooks", "addr", ln.Addr().String())
	return httpserver.Serve(ctx, srv, ln, 10*time.Second)
}

// ServeHTTP answers one webhook request, and counts it in
// windlass_receiver_requests_total: accepted, or refused, by Receiver (none
// when the path is no Receiver's).
func (s *WebhookServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	key, accepted := s.serve(w, req)
	result := metrics.RequestRefused
	if accepted {
		result = metrics.RequestAccepted
	}
	metrics.RecordReceiverRequest(key, result)
}

// serve answers one webhook request. It returns the key of the Receiver
// served at the path (empty when none is), and whether the request was
// accepted: verified, and its objects asked to reconcile.
func (s *WebhookServer) serve(w http.ResponseWriter, req *http.Request) (client.ObjectKey, bool) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return client.ObjectKey{}, false
	}
	if !s.acquire() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return client.ObjectKey{}, false
	}
	defer s.release()
	rcv, token, code := s.find(req.Context(), req.URL.Path)
	var key client.ObjectKey
	if rcv != nil {
		key = client.ObjectKeyFromObject(rcv)
	}
	if code != http.StatusOK {
		http.Error(w, http.StatusText(code), code)
		return key, false
	}
	return key, s.handle(w, req, rcv, token)
}

// handle verifies a request to rcv, whose token is token, and asks the
// objects it selects to reconcile. It tells whether the request was
// accepted: a refused request, a ping or an event not in spec.events is
// not; one whose objects were asked, even if some failed, is.
func (s *WebhookServer) handle(w http.ResponseWriter, req *http.Request, rcv *notificationv1.Receiver, token string) bool {
	ctx := req.Context()
	log := ctrl.LoggerFrom(ctx).WithValues("receiver", client.ObjectKeyFromObject(rcv).String())
	result, err := webhook.Verify(req, webhook.Spec{Type: rcv.Spec.Type, Events: rcv.Spec.Events, Token: token})
	if err == nil {
		err = s.replays.Admit(string(rcv.UID), result, s.now())
	}
	if err != nil {
		code := webhook.HTTPStatus(err)
		log.Info("Refused a webhook request", "status", code, "error", err.Error())
		s.Events.Warning(ctx, rcv, WebhookRefusedReason, "", "refused a webhook request: "+err.Error())
		http.Error(w, refusal(code), code)
		return false
	}
	if result.Skip {
		log.V(1).Info("Skipped a webhook request", "event", result.Event, "why", result.Reason)
		s.Events.Normal(ctx, rcv, WebhookSkippedReason, "", fmt.Sprintf("handled %s: nothing to do (%s)", describe(result), result.Reason))
		fmt.Fprintln(w, "skipped")
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	n, err := s.requestAll(ctx, rcv, result)
	if err != nil {
		log.Error(err, "Failed to request the reconciliation of some objects", "requested", n)
		s.Events.Warning(ctx, rcv, WebhookFailedReason, "",
			fmt.Sprintf("handled %s: requested %s, and failed: %v", describe(result), objects(n), err))
		http.Error(w, "failed to request the reconciliation of some objects", http.StatusInternalServerError)
		return true
	}
	log.Info("Handled a webhook request", "event", result.Event, "requested", n)
	s.Events.Normal(ctx, rcv, WebhookHandledReason, "", fmt.Sprintf("handled %s: requested %s", describe(result), objects(n)))
	fmt.Fprintf(w, "requested %s\n", objects(n))
	return true
}

// acquire takes a place among the requests served at once, if one is free.
func (s *WebhookServer) acquire() bool {
	s.once.Do(func() { s.inFlight = make(chan struct{}, maxInFlight) })
	select {
	case s.inFlight <- struct{}{}:
		return true
	default:
		return false
	}
}

// release gives back the place acquire took.
func (s *WebhookServer) release() { <-s.inFlight }

// find returns the Receiver served at path and its token, or the status
// code to answer with: 404 when no Receiver is served there (also when
// the path is not that of the Receiver's current token), 503 when it is
// suspended, not Ready (with the Receiver, whose request it is) or its
// Secret cannot be read, 500 when the cache cannot be read.
func (s *WebhookServer) find(ctx context.Context, path string) (*notificationv1.Receiver, string, int) {
	digest, ok := strings.CutPrefix(path, notificationv1.WebhookPathPrefix)
	if !ok || !isHexDigest(digest) {
		return nil, "", http.StatusNotFound
	}
	var list notificationv1.ReceiverList
	if err := s.Client.List(ctx, &list, client.MatchingFields{WebhookPathIndexKey: path}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to look up the Receiver of a webhook request")
		return nil, "", http.StatusInternalServerError
	}
	for i := range list.Items {
		rcv := &list.Items[i]
		token, err := readToken(ctx, s.Client, rcv)
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("Cannot read the token of a Receiver", "Receiver", client.ObjectKeyFromObject(rcv).String(), "error", err.Error())
			return nil, "", http.StatusServiceUnavailable
		}
		current := webhook.WebhookPath(token, rcv.Name, rcv.Namespace)
		if subtle.ConstantTimeCompare([]byte(current), []byte(path)) != 1 {
			continue // the token changed since the path was published
		}
		if rcv.Spec.Suspend || !conditions.IsTrue(rcv, meta.ReadyCondition) {
			return rcv, "", http.StatusServiceUnavailable
		}
		return rcv, token, http.StatusOK
	}
	return nil, "", http.StatusNotFound
}

// isHexDigest reports whether s is a lowercase hex SHA-256.
func isHexDigest(s string) bool {
	if len(s) != digestLength {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// refusal is the short text of a refused request: it says why in general
// terms and never quotes the request.
func refusal(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusRequestEntityTooLarge:
		return "request body too large"
	case http.StatusBadRequest:
		return "bad webhook payload"
	case http.StatusTooManyRequests:
		return "too many requests"
	}
	return http.StatusText(code)
}

// describe names the request's event for an event message.
func describe(result webhook.Result) string {
	if result.Event == "" {
		return "a webhook request"
	}
	return fmt.Sprintf("'%s' event", result.Event)
}

// objects says how many objects, in words.
func objects(n int) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

// now returns the Server's time.
func (s *WebhookServer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
