package manager

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/httpserver"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/ui"
)

// UISignInOptions are the options of the UI's sign-in.
type UISignInOptions struct {
	// Methods are the ways to sign in: "token" (a Kubernetes token the
	// API server reviews) and "oidc" (an OpenID provider). None keeps the
	// UI on loopback, read-only, without sign-in.
	Methods []string
	// OIDCIssuerURL, OIDCClientID, OIDCClientSecretFile and
	// OIDCRedirectURL configure the OpenID provider.
	OIDCIssuerURL, OIDCClientID, OIDCClientSecretFile, OIDCRedirectURL string
	// OIDCUsernameClaim, OIDCUsernamePrefix, OIDCGroupsClaim and
	// OIDCGroupsPrefix name users as the API server's OIDC flags would.
	OIDCUsernameClaim, OIDCUsernamePrefix, OIDCGroupsClaim, OIDCGroupsPrefix string
	// SessionKeyFile holds the key that signs the sessions' cookies; a
	// random key without it (sessions end with the process).
	SessionKeyFile string
	// SessionTTL is how long a session lasts.
	SessionTTL time.Duration
	// ReadOnly offers no actions to signed-in users.
	ReadOnly bool
}

// recentEvents is how many of the latest events the UI keeps (about
// 1.5 KiB each at most).
const recentEvents = 1000

// uiReviewsQPS is the rate of the UI's token and access reviews.
const uiReviewsQPS = 20

// signInMethods are the values of --ui-signin.
var signInMethods = []string{"token", "oidc"}

// validate checks the sign-in options of a UI on addr.
func (o UISignInOptions) validate(addr string) error {
	if len(o.Methods) == 0 {
		return checkUIAddr(addr)
	}
	if addr == "" {
		return fmt.Errorf("--ui-signin needs --ui-addr")
	}
	for _, m := range o.Methods {
		if !slices.Contains(signInMethods, m) {
			return fmt.Errorf("--ui-signin: unknown method %q: choose from %s", m, strings.Join(signInMethods, ", "))
		}
	}
	if slices.Contains(o.Methods, "oidc") {
		for flag, v := range map[string]string{"--ui-oidc-issuer-url": o.OIDCIssuerURL, "--ui-oidc-client-id": o.OIDCClientID,
			"--ui-oidc-redirect-url": o.OIDCRedirectURL} {
			if v == "" {
				return fmt.Errorf("--ui-signin=oidc needs %s", flag)
			}
		}
	}
	return nil
}

// uiLogLines is how many lines about objects the web UI keeps of the
// controllers' logs.
const uiLogLines = 2000

// WithUILogs returns logger, which also keeps, when opts serve the web UI,
// the lines about objects for the UI's pages (opts.UILogs): call it before
// setting the process's logger.
func WithUILogs(logger logr.Logger, opts *Options) logr.Logger {
	if opts.UIAddr == "" {
		return logger
	}
	opts.UILogs = ui.NewLogs(uiLogLines)
	return logr.New(opts.UILogs.Tee(logger.GetSink()))
}

// startUI serves the web UI on opts.UIAddr, when set, from the shared
// informer cache, with live updates from its informers. Its server has no
// write timeout: the live updates' stream stays open.
func (m *Manager) startUI(ctx context.Context, opts Options) error {
	if opts.UIAddr == "" {
		return nil
	}
	changes, err := ui.NewChanges(ctx, m.GetCache(), kinds.All)
	if err != nil {
		return err
	}
	m.recent = ui.NewRecent(m.GetScheme(), recentEvents)
	server := &ui.Server{Reader: m.GetCache(), Kinds: kinds.All, Log: ctrl.Log.WithName("ui"), Changes: changes, Events: m.recent,
		Previews: map[string]ui.Previewer{}, Logs: opts.UILogs}
	if opts.Shards.auto() {
		// The shard member starts after the UI is set up, before any page
		// is served.
		server.Holder = func(obj client.Object) string {
			if m.Shard == nil {
				return ""
			}
			return m.Shard.HolderOf(obj)
		}
	}
	m.ui = server
	if opts.UIActions {
		server.Actions = m.GetClient()
	}
	if server.SignIn, err = m.signIn(opts.UISignIn); err != nil {
		return err
	}
	if server.SignIn == nil {
		// Without sign-in, the UI's one user on loopback reads the objects
		// the cache does not hold as the controller.
		if server.Live, err = client.New(m.GetConfig(), client.Options{Scheme: m.GetScheme(), Mapper: m.GetRESTMapper()}); err != nil {
			return err
		}
		if server.Pods, err = corev1client.NewForConfig(m.GetConfig()); err != nil {
			return err
		}
	}
	return m.Add(&httpserver.Runnable{Addr: opts.UIAddr, Grace: 5 * time.Second, Server: &http.Server{Handler: server.Handler(),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}})
}

// signIn returns the UI's sign-in, or nil without one.
func (m *Manager) signIn(o UISignInOptions) (*ui.SignIn, error) {
	if len(o.Methods) == 0 {
		return nil, nil
	}
	// The reviews of sign-ins and access have their own client and rate
	// limit: no one at the sign-in page can use up the reconcilers'.
	cfg := rest.CopyConfig(m.GetConfig())
	cfg.QPS, cfg.Burst = uiReviewsQPS, 2*uiReviewsQPS
	reviews, err := client.New(cfg, client.Options{Scheme: m.GetScheme(), Mapper: m.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	s := &ui.SignIn{Client: reviews, Tokens: slices.Contains(o.Methods, "token"), SessionTTL: o.SessionTTL}
	if o.SessionKeyFile != "" {
		key, err := os.ReadFile(o.SessionKeyFile)
		if err != nil || len(key) < 32 {
			return nil, fmt.Errorf("--ui-session-key-file: want a file of at least 32 bytes: %v", err)
		}
		s.Key = key
	}
	if slices.Contains(o.Methods, "oidc") {
		s.OIDC = &ui.OIDC{IssuerURL: o.OIDCIssuerURL, ClientID: o.OIDCClientID, RedirectURL: o.OIDCRedirectURL,
			UsernameClaim: o.OIDCUsernameClaim, UsernamePrefix: o.OIDCUsernamePrefix, GroupsClaim: o.OIDCGroupsClaim, GroupsPrefix: o.OIDCGroupsPrefix}
		if o.OIDCClientSecretFile != "" {
			secret, err := os.ReadFile(o.OIDCClientSecretFile)
			if err != nil {
				return nil, fmt.Errorf("--ui-oidc-client-secret-file: %w", err)
			}
			s.OIDC.ClientSecret = strings.TrimSpace(string(secret))
		}
	}
	s.Impersonate, s.ImpersonatePods, s.ReadOnly = m.impersonating, m.impersonatingPods, o.ReadOnly
	return s, nil
}

// impersonating returns a client that acts as u: the API server decides
// what u may do, as it would for kubectl.
func (m *Manager) impersonating(u ui.User) (client.Client, error) {
	return client.New(m.configAs(u), client.Options{Scheme: m.GetScheme(), Mapper: m.GetRESTMapper()})
}

// impersonatingPods returns the pods' API as u, for their logs.
func (m *Manager) impersonatingPods(u ui.User) (corev1client.PodsGetter, error) {
	return corev1client.NewForConfig(m.configAs(u))
}

// configAs returns the manager's config, impersonating u.
func (m *Manager) configAs(u ui.User) *rest.Config {
	cfg := rest.CopyConfig(m.GetConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: u.Name, Groups: u.Groups}
	return cfg
}

// checkUIAddr refuses a UI address that is not on loopback.
func checkUIAddr(addr string) error {
	if addr == "" {
		return nil
	}
	if err := ui.CheckLoopback(addr); err != nil {
		return fmt.Errorf("--ui-addr: %w (or sign users in: --ui-signin)", err)
	}
	return nil
}
