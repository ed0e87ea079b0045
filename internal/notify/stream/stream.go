// Package stream holds the notification Provider types that publish
// events on a message bus rather than call an HTTP API: nats, which
// publishes each event, in its wire format, on a NATS subject.
//
// Connections are bounded like the HTTP providers': a dialer that refuses
// link-local addresses unless allowed, the Provider's timeout around the
// whole publication, the TLS of certSecretRef; errors never quote the
// Secret's password or token, nor the credentials of the address.
package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Types are the provider types this package serves.
var Types = []string{"nats"}

// New returns the Notifier of cfg.Type.
func New(cfg notify.Config) (notify.Notifier, error) {
	if cfg.Type != "nats" {
		return nil, fmt.Errorf("unknown provider type %q (this package serves %s)", cfg.Type, strings.Join(Types, ", "))
	}
	n, err := newNATS(cfg)
	if err != nil {
		return nil, notify.NewScrubber(cfg, addressPassword(cfg.Address)...).Error(fmt.Errorf("nats provider: %w", err))
	}
	return n, nil
}

// NATS (docs.nats.io, "Subject-Based Messaging", "Authenticating with a
// User and Password"): the address is the server's URL (nats://host:4222,
// or tls:// for TLS; user:password@ in it works too, for an address kept
// in the Secret), spec.channel the subject to publish on, the Secret's
// username and password (or token) the credentials. The message is the
// event in its wire format, as the generic webhook posts it, with the
// Secret's headers as message headers. Each message opens a connection,
// publishes, and flushes: the server's answer to the flush tells that it
// took the message, or why not (an authorization violation).

// natsPublisher publishes on one subject of one server.
type natsPublisher struct {
	cfg     notify.Config
	server  string
	subject string
	scrub   notify.Scrubber
}

func newNATS(cfg notify.Config) (*natsPublisher, error) {
	if cfg.Address == "" {
		return nil, errors.New("an address is required: the server's URL, nats://host:4222 (spec.address or the Secret's 'address')")
	}
	u, err := url.Parse(cfg.Address)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
		return nil, fmt.Errorf("invalid address %q: want nats://HOST:PORT or tls://HOST:PORT", redact.URL(cfg.Address))
	}
	if err := cfg.AddressPolicy().CheckHost(u.Hostname()); err != nil {
		return nil, fmt.Errorf("address %q: %w", redact.URL(cfg.Address), err)
	}
	if err := checkSubject(cfg.Channel); err != nil {
		return nil, err
	}
	if cfg.Proxy != nil {
		return nil, errors.New("a proxy (spec.proxySecretRef) is not supported: NATS connections do not go through HTTP proxies")
	}
	return &natsPublisher{cfg: cfg, server: cfg.Address, subject: cfg.Channel,
		scrub: notify.NewScrubber(cfg, addressPassword(cfg.Address)...)}, nil
}

// checkSubject refuses a subject one cannot publish on: empty, with
// whitespace or an empty token, or with wildcards.
func checkSubject(subject string) error {
	if subject == "" {
		return errors.New("the subject is required: set spec.channel")
	}
	if strings.ContainsAny(subject, " \t\r\n") {
		return fmt.Errorf("subject %q (spec.channel) holds whitespace", subject)
	}
	for _, token := range strings.Split(subject, ".") {
		switch token {
		case "":
			return fmt.Errorf("subject %q (spec.channel) has an empty token", subject)
		case "*", ">":
			return fmt.Errorf("subject %q (spec.channel) has a wildcard: a message is published on one subject", subject)
		}
	}
	return nil
}

// Post publishes m and waits for the server to take it.
func (p *natsPublisher) Post(ctx context.Context, m notify.Message) error {
	return p.scrub.Error(p.publish(ctx, m))
}

func (p *natsPublisher) publish(ctx context.Context, m notify.Message) error {
	data, err := notify.WireEvent(m)
	if err != nil {
		return err
	}
	timeout := p.cfg.Timeout
	if timeout <= 0 {
		timeout = notify.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := nats.Connect(p.server, p.options(ctx, timeout)...)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redact.URL(p.server), err)
	}
	defer nc.Close()
	msg := &nats.Msg{Subject: p.subject, Data: data, Header: nats.Header{}}
	for k, v := range p.cfg.Headers {
		msg.Header.Set(k, v)
	}
	if err := nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("publishing on %q: %w", p.subject, err)
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("publishing on %q: %w", p.subject, err)
	}
	if err := nc.LastError(); err != nil {
		return fmt.Errorf("publishing on %q: %w", p.subject, err)
	}
	return nil
}

// options are the connection's: a name, no reconnection, the bounded
// dialer (which gives up with ctx), TLS and the credentials.
func (p *natsPublisher) options(ctx context.Context, timeout time.Duration) []nats.Option {
	opts := []nats.Option{
		nats.Name("windlass-notification"), nats.NoReconnect(), nats.Timeout(timeout),
		nats.SetCustomDialer(ctxDialer{ctx: ctx, dialer: notify.Dialer(p.cfg, timeout)}),
	}
	if p.cfg.TLS != nil {
		opts = append(opts, nats.Secure(p.cfg.TLS.Clone()))
	}
	switch {
	case p.cfg.BasicUsername != "" || p.cfg.Password != "":
		opts = append(opts, nats.UserInfo(p.cfg.BasicUsername, p.cfg.Password))
	case p.cfg.Token != "":
		opts = append(opts, nats.Token(p.cfg.Token))
	}
	return opts
}

// ctxDialer dials with a context, which nats.CustomDialer does not take.
type ctxDialer struct {
	ctx    context.Context
	dialer *net.Dialer
}

// Dial implements nats.CustomDialer.
func (d ctxDialer) Dial(network, address string) (net.Conn, error) {
	return d.dialer.DialContext(d.ctx, network, address)
}

// addressPassword returns the password of the address, a secret.
func addressPassword(address string) []string {
	u, err := url.Parse(address)
	if err != nil || u.User == nil {
		return nil
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		return []string{pw}
	}
	return nil
}
