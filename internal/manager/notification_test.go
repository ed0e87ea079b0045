package manager

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

// TestEventsAllowedUsers: by default the event endpoint admits the
// install's service account in the runtime namespace; the flag takes
// names and namespace/names; a bad name stops the controller.
func TestEventsAllowedUsers(t *testing.T) {
	g := NewWithT(t)
	var o NotificationOptions
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	o.bindFlags(fs)
	g.Expect(fs.Parse(nil)).To(Succeed())
	users, err := o.eventsAllowedUsers("windlass-system")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(users).To(Equal([]string{"system:serviceaccount:windlass-system:windlass"}))

	g.Expect(fs.Parse([]string{"--events-allowed-service-accounts=windlass,ci/event-poster"})).To(Succeed())
	users, err = o.eventsAllowedUsers("windlass-system")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(users).To(Equal([]string{"system:serviceaccount:windlass-system:windlass", "system:serviceaccount:ci:event-poster"}))

	o.EventsAllowedServiceAccounts = nil
	users, err = o.eventsAllowedUsers("flux-system")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(users).To(Equal([]string{"system:serviceaccount:flux-system:windlass"}), "an empty list is the default")

	o.EventsAllowedServiceAccounts = []string{"a/b/c"}
	_, err = o.eventsAllowedUsers("flux-system")
	g.Expect(err).To(MatchError(ContainSubstring("--events-allowed-service-accounts")))
}
