// Package providers builds the Notifier of any Provider type Windlass
// serves, from the packages that implement them: chat (chat tools and
// generic webhooks), incident (incident and observability services, and
// GitHub dispatch), commitstatus (commit statuses on Git forges), comment
// (comments on pull and merge requests) and stream (message buses).
package providers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/notify/chat"
	"github.com/windlass-dev/windlass/internal/notify/comment"
	"github.com/windlass-dev/windlass/internal/notify/commitstatus"
	"github.com/windlass-dev/windlass/internal/notify/incident"
	"github.com/windlass-dev/windlass/internal/notify/stream"
)

// family is one package of provider types.
type family struct {
	types []string
	new   func(notify.Config) (notify.Notifier, error)
}

var families = []family{
	{types: chat.Types, new: chat.New},
	{types: incident.Types, new: incident.New},
	{types: commitstatus.Types, new: commitstatus.New},
	{types: stream.Types, new: stream.New},
	{types: comment.Types, new: comment.New},
}

// Types returns every type served, sorted.
func Types() []string {
	var out []string
	for _, f := range families {
		out = append(out, f.types...)
	}
	slices.Sort(out)
	return out
}

// IsCommitStatus tells whether a type posts commit statuses: those get
// only the events that carry a revision.
func IsCommitStatus(providerType string) bool {
	return slices.Contains(commitstatus.Types, providerType)
}

// NeedsToken tells whether a type cannot work without the Secret's token:
// the commit-status and pull request comment types, which call a forge's
// API.
func NeedsToken(providerType string) bool {
	return IsCommitStatus(providerType) || slices.Contains(comment.Types, providerType)
}

// AddressSchemes are the URL schemes of a type's address: nats:// and
// tls:// for the stream types, http:// and https:// for the others.
func AddressSchemes(providerType string) []string {
	if slices.Contains(stream.Types, providerType) {
		return []string{"nats", "tls"}
	}
	return []string{"https", "http"}
}

// New returns the Notifier of cfg.Type; a type Windlass does not serve is
// an error that names the types it does.
func New(cfg notify.Config) (notify.Notifier, error) {
	for _, f := range families {
		if slices.Contains(f.types, cfg.Type) {
			return f.new(cfg)
		}
	}
	return nil, fmt.Errorf("provider type %q is not served by Windlass: choose one of %s", cfg.Type, strings.Join(Types(), ", "))
}
