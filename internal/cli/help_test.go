package cli

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelp: the root help groups the verbs and starts with examples; the
// verbs that act on objects have examples down to each kind; no flag's
// value placeholder is a phrase; no group command is a bare plural.
func TestHelp(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	root := NewRootCommand(&out, &out)
	root.SetArgs([]string{"--help"})
	g.Expect(root.Execute()).To(Succeed())
	help := out.String()
	g.Expect(help).To(ContainSubstring("Examples:\n  windlass dev "))
	for _, title := range []string{"Getting started:", "Looking at objects:", "Acting on objects:", "Installing into a cluster:"} {
		g.Expect(help).To(ContainSubstring(title))
	}
	g.Expect(help).NotTo(ContainSubstring("Additional Commands"), "every verb is in a group")

	for _, path := range []string{"reconcile", "reconcile kustomization", "suspend", "suspend source git", "resume",
		"resume kustomization", "export", "export gate", "delete", "delete helmrelease", "version"} {
		cmd, _, err := root.Find(strings.Fields(path))
		g.Expect(err).NotTo(HaveOccurred(), path)
		g.Expect(cmd.Example).To(HavePrefix("  windlass "+strings.Fields(path)[0]), path)
	}
	walkCommands(root, func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			g.Expect(name).NotTo(ContainSubstring(" "), "the placeholder of %s --%s", cmd.CommandPath(), f.Name)
		})
		if cmd.HasSubCommands() {
			g.Expect(strings.Fields(cmd.Short)).NotTo(HaveLen(1), "the Short of %s", cmd.CommandPath())
		}
	})
}
