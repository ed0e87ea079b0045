package manager

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	notifyctrl "github.com/windlass-dev/windlass/internal/controller/notification"
	"github.com/windlass-dev/windlass/internal/httpserver"
	"github.com/windlass-dev/windlass/internal/kubeauth"

	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/notify/forward"
)

// DefaultEventsServiceAccount is the service account that the install
// manifests give every controller (config/rbac/service_account.yaml): the
// event endpoint admits it, in the runtime namespace, by default.
const DefaultEventsServiceAccount = "windlass"

// NotificationOptions are the options of the notification controller.
type NotificationOptions struct {
	// ReceiverAddr is where the Receivers' webhooks are served.
	ReceiverAddr string
	// EventsListenAddr, when set, serves the event endpoint that
	// controllers in other processes post to.
	EventsListenAddr string
	// EventsAllowedServiceAccounts are the service accounts whose tokens
	// the event endpoint admits, each "name" (in Namespace) or
	// "namespace/name"; DefaultEventsServiceAccount when empty.
	EventsAllowedServiceAccounts []string
	// AllowLinkLocal lets Providers post to link-local addresses.
	AllowLinkLocal bool
	// RateLimitInterval is the window in which the same event is sent
	// once and a flood is folded into one message.
	RateLimitInterval time.Duration
	// Dispatch tunes the dispatcher beyond its window (each zero value
	// takes the dispatcher's default); it has no flags.
	Dispatch dispatch.Options
}

func (o *NotificationOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ReceiverAddr, "receiver-addr", ":9292", "address the Receivers' webhooks are served on")
	fs.StringVar(&o.EventsListenAddr, "events-listen-addr", "", "address of the event endpoint for controllers in other processes (none when empty)")
	fs.StringSliceVar(&o.EventsAllowedServiceAccounts, "events-allowed-service-accounts", []string{DefaultEventsServiceAccount},
		"service accounts whose tokens the event endpoint admits, each name (in the runtime namespace) or namespace/name")
	fs.BoolVar(&o.AllowLinkLocal, "allow-link-local-addresses", false, "let Providers post to link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata endpoints (fd00:ec2::254, 100.100.100.200)")
	fs.DurationVar(&o.RateLimitInterval, "rate-limit-interval", dispatch.DefaultWindow, "window in which the same event is sent once and a flood of failures is folded into one message")
}

// startEvents prepares where the events of this process go: a dispatcher
// when the notification controller runs here (handed over in process),
// else the event endpoint of opts.EventsAddr, if any.
func (m *Manager) startEvents(controllers []string, opts Options) error {
	for _, name := range controllers {
		if name == NotificationController {
			tuning := opts.Notification.Dispatch
			tuning.Window = opts.Notification.RateLimitInterval
			if tuning.Log.GetSink() == nil {
				tuning.Log = ctrl.Log.WithName("notification")
			}
			m.dispatcher = dispatch.New(tuning)
			return m.Add(runnableFunc(m.dispatcher.Run))
		}
	}
	return nil
}

// Dispatcher returns the dispatcher of the events of this process, when
// the notification controller runs here.
func (m *Manager) Dispatcher() *dispatch.Dispatcher { return m.dispatcher }

// eventSink returns the sink of the events of the controller called
// name: the dispatcher in process, a Poster to opts.EventsAddr, or none.
func (m *Manager) eventSink(name string) event.Sink {
	return event.Tee(m.forwardingSink(name), m.recent)
}

// forwardingSink returns the sink that forwards the events of the
// controller name to the notification controller, in this process or
// another; nil when none runs.
func (m *Manager) forwardingSink(name string) event.Sink {
	sink := forward.Sink{Dispatcher: m.dispatcher, Scheme: m.GetScheme(), Controller: name}
	switch {
	case m.dispatcher != nil:
		return &sink
	case m.eventsAddr != "":
		poster := &forward.Poster{Sink: sink, URL: m.eventsAddr, Token: forward.TokenFromConfig(m.GetConfig()),
			Log: ctrl.Log.WithName("events").WithValues("controller", name)}
		if err := m.Add(poster); err != nil {
			ctrl.Log.Error(err, "Cannot post events", "controller", name)
			return nil
		}
		return poster
	}
	return nil
}

func (m *Manager) setupNotification(ctx context.Context, opts Options) error {
	events := m.events(NotificationController)
	alerts := &notifyctrl.AlertReconciler{Client: m.GetClient(), Dispatcher: m.dispatcher, Events: events,
		AllowLinkLocal: opts.Notification.AllowLinkLocal, AllowLoopback: opts.AllowLoopback, NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs}
	// Every replica reconciles every Alert: each sends the alerts of the
	// objects it holds.
	alertOpts := opts.controllerOptions()
	alertOpts.Sharder = nil
	if err := alerts.SetupWithManager(ctx, m, alertOpts); err != nil {
		return err
	}
	receivers := &notifyctrl.ReceiverReconciler{Client: m.GetClient(), Events: events,
		JitterPercent: opts.IntervalJitterPercentage, NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs}
	if err := receivers.SetupWithManager(ctx, m, opts.controllerOptions()); err != nil {
		return err
	}
	server := &notifyctrl.WebhookServer{Client: m.GetClient(), Events: events, Addr: opts.Notification.ReceiverAddr,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs}
	if m.Shard != nil {
		// A webhook may name objects that another replica holds, and
		// caches alone.
		server.Targets = m.GetAPIReader()
	}
	if err := server.SetupWithManager(ctx, m); err != nil {
		return err
	}
	if opts.Notification.EventsListenAddr == "" {
		return nil
	}
	auth, err := m.eventsAuth(opts)
	if err != nil {
		return err
	}
	return m.Add(apiServer(opts.Notification.EventsListenAddr, &forward.Handler{Dispatcher: m.dispatcher, Auth: auth}))
}

// eventsAuth returns what admits the callers of the event endpoint: the
// tokens of the service accounts of --events-allowed-service-accounts.
func (m *Manager) eventsAuth(opts Options) (*kubeauth.TokenReviewer, error) {
	allowed, err := opts.Notification.eventsAllowedUsers(opts.Namespace)
	if err != nil {
		return nil, err
	}
	log := ctrl.Log.WithName("events")
	log.Info("The event endpoint admits the tokens of these service accounts", "allowed", allowed)
	return &kubeauth.TokenReviewer{Client: m.GetClient(), Allowed: allowed, Log: log}, nil
}

// eventsAllowedUsers returns the user names of the service accounts of
// --events-allowed-service-accounts, those without a namespace in
// namespace (the runtime namespace).
func (o NotificationOptions) eventsAllowedUsers(namespace string) ([]string, error) {
	names := o.EventsAllowedServiceAccounts
	if len(names) == 0 {
		names = []string{DefaultEventsServiceAccount}
	}
	allowed, err := kubeauth.AllowedUsers(namespace, names)
	if err != nil {
		return nil, fmt.Errorf("invalid --events-allowed-service-accounts: %w", err)
	}
	return allowed, nil
}

// runnableFunc runs a function as a manager Runnable on every replica.
type runnableFunc func(ctx context.Context) error

// Start implements manager.Runnable.
func (f runnableFunc) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable: events
// are recorded, so dispatched, on every replica.
func (f runnableFunc) NeedLeaderElection() bool { return false }

// apiServer serves handler, a small API, on addr while the manager runs.
// A client that sends its body slowly, or not at all, holds a connection
// for ReadTimeout at most.
func apiServer(addr string, handler http.Handler) *httpserver.Runnable {
	return &httpserver.Runnable{Addr: addr, Grace: 5 * time.Second, Server: &http.Server{Handler: handler,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute}}
}
