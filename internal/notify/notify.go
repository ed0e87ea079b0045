// Package notify holds what every notification provider shares: the
// message a provider sends (an event, perhaps standing for many folded
// into it, or saying that a failure is resolved), the configuration a
// Provider object and its Secrets give, and the HTTP client with which
// providers reach their services: TLS and proxy from the Provider's
// Secrets, a timeout, and a dialer that refuses link-local addresses (the
// cloud metadata endpoints) unless allowed.
//
// The provider types live in subpackages; each returns a Notifier built
// from a Config.
package notify

import (
	"context"
	"crypto/tls"
	"net/url"
	"time"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
)

// Message is what a Notifier sends: one event, which may stand for others
// folded into it, or which may say that an earlier failure is resolved.
type Message struct {
	eventv1.Event
	// Folded counts the other events, like this one, that were folded into
	// it instead of being sent (0: none). Providers say so in the text,
	// e.g. "(and 41 more like it)".
	Folded int
	// Resolves tells that the object recovered from the failure an earlier
	// message reported: incident providers (pagerduty, alertmanager, ...)
	// resolve the incident, the others say it is resolved.
	Resolves bool
}

// Notifier sends messages to one service.
type Notifier interface {
	// Post sends m. It returns an error when the service did not take it;
	// the error says why (the status code and a short, redacted part of
	// the answer) without the address's credentials or the token.
	Post(ctx context.Context, m Message) error
}

// Config is what a Provider object and its Secrets say.
type Config struct {
	// Type is the provider's type: "slack", "github", ...
	Type string
	// Address is the service's URL (the Secret's address, when it has one,
	// wins over spec.address).
	Address string
	// Channel is spec.channel: the channel, room, chat or topic.
	Channel string
	// Username is spec.username: the name messages are sent as.
	Username string
	// Token is the Secret's token.
	Token string
	// Password is the Secret's password, with the Secret's username
	// (BasicUsername) for basic auth.
	Password string
	// BasicUsername is the Secret's username, for basic auth.
	BasicUsername string
	// Headers are the Secret's headers, added to every request.
	Headers map[string]string
	// CommitStatusExpr is spec.commitStatusExpr (CEL) for commit-status
	// providers; empty for the default status key.
	CommitStatusExpr string
	// TLS is the client TLS of spec.certSecretRef; nil for the defaults.
	TLS *tls.Config
	// Proxy is the proxy of spec.proxySecretRef; nil for the
	// environment's.
	Proxy *url.URL
	// Timeout bounds one request (DefaultTimeout when zero).
	Timeout time.Duration
	// AllowLinkLocal lets the address resolve to link-local addresses
	// (169.254.0.0/16, fe80::/10) and cloud metadata endpoints.
	AllowLinkLocal bool
	// AllowLoopback lets the address resolve to the controller's own host
	// (127.0.0.0/8, ::1, 0.0.0.0, ::).
	AllowLoopback bool
	// ProviderName and ProviderNamespace name the Provider object, for
	// commitStatusExpr and messages.
	ProviderName, ProviderNamespace string
}

// DefaultTimeout bounds a request of a Provider without spec.timeout.
const DefaultTimeout = 15 * time.Second
