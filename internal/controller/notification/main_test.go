package notification_test

import (
	"os"
	"testing"
	"time"

	"github.com/windlass-dev/windlass/internal/controller/notification"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/notify/dispatch"
	"github.com/windlass-dev/windlass/internal/notify/forward"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
)

// TestMain runs the notification controller of the real manager (Alerts
// with their dispatcher, Receivers with their webhook Server) against the
// test control plane, the dispatcher on the tests' clock.
func TestMain(m *testing.M) {
	os.Exit(testmanager.Suite{
		Env: notification.Env, Logs: notification.Logs,
		Controllers: []string{manager.NotificationController},
		Options: func(opts *manager.Options) {
			opts.Notification.RateLimitInterval = notification.Window
			opts.Notification.Dispatch = dispatch.Options{FlushInterval: 100 * time.Millisecond,
				Backoff: 100 * time.Millisecond, Now: notification.Now}
		},
		Started: func(mgr *manager.Manager, opts manager.Options) error {
			*notification.Dispatcher = mgr.Dispatcher()
			*notification.Sink = &forward.Sink{Dispatcher: mgr.Dispatcher(), Scheme: mgr.GetScheme(), Controller: "kustomize-controller"}
			*notification.ServerURL = "http://" + opts.Notification.ReceiverAddr
			*notification.ServedFrom = mgr.GetClient()
			return nil
		},
	}.Run(m))
}
