package manager

import (
	"context"
	"strings"

	"k8s.io/client-go/rest"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// finalizerNameWarning is the start of the API server's warning about a
// finalizer name without a path, which the toolkit's finalizer
// (finalizers.fluxcd.io) draws on every object it is added to. The name is
// part of the wire contract, so it stays, and the warning is debug output.
const finalizerNameWarning = "prefer a domain-qualified finalizer name"

// quietWarnings logs the API server's warnings as controller-runtime does,
// at info level, except the finalizer-name warning, at debug level.
type quietWarnings struct {
	next rest.WarningHandlerWithContext
}

// HandleWarningHeaderWithContext logs one warning.
func (q quietWarnings) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, message string) {
	if strings.Contains(message, finalizerNameWarning) {
		crlog.FromContext(ctx).V(1).Info("API server warning", "warning", message)
		return
	}
	q.next.HandleWarningHeaderWithContext(ctx, code, agent, message)
}

// withQuietWarnings returns a copy of cfg whose API warnings go through
// quietWarnings, unless cfg has a warning handler already.
func withQuietWarnings(cfg *rest.Config) *rest.Config {
	if cfg.WarningHandler != nil || cfg.WarningHandlerWithContext != nil {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = quietWarnings{next: crlog.NewKubeAPIWarningLogger(crlog.KubeAPIWarningLoggerOptions{})}
	return cfg
}
