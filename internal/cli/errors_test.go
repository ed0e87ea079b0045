package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// TestErrorsSayWhatToDo: a missing object, a missing NAME, a misspelled
// flag, a duration without a unit and a --timeout that runs out are each
// one line that says what to do, the same way for every command.
func TestErrorsSayWhatToDo(t *testing.T) {
	ns := env.CreateNamespace(t)
	missing := "not found: check its name and -n"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"reconcile of a missing object", []string{"reconcile", "ks", "nope"}, "Kustomization " + ns + "/nope " + missing},
		{"export of a missing object", []string{"export", "source", "git", "nope"}, "GitRepository " + ns + "/nope " + missing},
		{"suspend of a missing object", []string{"suspend", "ks", "nope"}, "Kustomization " + ns + "/nope " + missing},
		{"resume of a missing object", []string{"resume", "hr", "nope"}, "HelmRelease " + ns + "/nope " + missing},
		{"gate close of a missing gate", []string{"gate", "close", "nope"}, "Gate " + ns + "/nope " + missing},
		{"reconcile without a name", []string{"reconcile", "ks"}, "NAME is required (usage: windlass reconcile kustomization NAME)"},
		{"create without a name", []string{"create", "source", "git", "--url", "https://example.com/x.git"},
			"NAME is required (usage: windlass create source git NAME)"},
		{"delete with two names", []string{"delete", "ks", "a", "b"}, `too many arguments: "b" (usage: windlass delete kustomization NAME)`},
		{"a misspelled flag", []string{"get", "ks", "--namesapce", "x"}, "unknown flag: --namesapce: did you mean --namespace?"},
		{"a duration without a unit", []string{"create", "source", "git", "x", "--url", "https://example.com/x.git", "--interval", "5"},
			`invalid --interval "5": write a duration like 1m or 30s`},
		{"a timeout that runs out", []string{"reconcile", "ks", "nope", "--timeout", "1ns"}, "timed out after 1ns (raise --timeout)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, append(tt.args, "-n", ns)...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(err.Error()).NotTo(ContainSubstring("toolkit.fluxcd.io"), "no raw API text")
			g.Expect(err.Error()).NotTo(ContainSubstring("rate limiter"))
		})
	}
}

// TestUnreachableAPIServer: a kubeconfig whose server does not answer
// says so, with its address, rather than hint at missing CRDs.
func TestUnreachableAPIServer(t *testing.T) {
	g := NewWithT(t)
	// A reserved port that nothing listens on.
	addrs, err := childproc.FreeAddrs(1)
	g.Expect(err).NotTo(HaveOccurred())
	dead := addrs[0]
	data, err := os.ReadFile(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	server := regexp.MustCompile(`server: https://[^\s]+`)
	g.Expect(server.Match(data)).To(BeTrue(), "the test kubeconfig names its server")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(path, server.ReplaceAll(data, []byte("server: https://"+dead)), 0o600)).To(Succeed())

	for _, args := range [][]string{{"get", "all"}, {"reconcile", "ks", "app"}} {
		root := NewRootCommand(io.Discard, io.Discard)
		root.SetArgs(append(args, "--kubeconfig", path))
		err := root.Execute()
		g.Expect(err).To(MatchError(fmt.Sprintf("cannot reach the API server at %s (is windlass dev running?): connection refused", dead)), args)
	}
}

// TestListErrorPlural: the kinds a list names are spelled as the API
// names them.
func TestListErrorPlural(t *testing.T) {
	g := NewWithT(t)
	g.Expect(pluralKind("GitRepository")).To(Equal("GitRepositories"))
	g.Expect(pluralKind("Kustomization")).To(Equal("Kustomizations"))
	g.Expect(listError(pluralKind("ImagePolicy"), fmt.Errorf("boom"))).To(MatchError("listing ImagePolicies: boom"))
}
