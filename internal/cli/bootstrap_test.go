package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBootstrapBadFlags: every flag is checked before anything reaches the
// repository or the cluster (there is no cluster here), in one line that
// says what to do and never holds the password.
func TestBootstrapBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no URL", args: []string{"--path", "clusters/dev"}, want: "--url is required"},
		{name: "no path", args: []string{"--url", "https://git.example.com/fleet.git"}, want: `--path "" must be a folder inside the repository`},
		{name: "a path outside the repository", args: []string{"--url", "https://git.example.com/fleet.git", "--path", "../up"},
			want: `--path "../up" must be a folder inside the repository`},
		{name: "an absolute path", args: []string{"--url", "https://git.example.com/fleet.git", "--path", "/clusters"},
			want: `--path "/clusters" must be a folder inside the repository`},
		{name: "a zero interval", args: []string{"--url", "https://git.example.com/fleet.git", "--path", "c", "--interval", "0s"},
			want: "--interval must be a positive duration"},
		{name: "a URL that is not git", args: []string{"--url", "ftp://git.example.com/fleet", "--path", "c"}, want: "--url"},
		{name: "a key for an https URL", args: []string{"--url", "https://git.example.com/fleet.git", "--path", "c",
			"--private-key-file", "id", "-p", "pa55word"}, want: "--private-key-file and --known-hosts-file are for ssh URLs"},
		{name: "an ssh URL without a key", args: []string{"--url", "ssh://git@git.example.com/fleet.git", "--path", "c"},
			want: "an ssh URL needs --private-key-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var out, errOut bytes.Buffer
			root := NewRootCommand(&out, &errOut)
			root.SetArgs(append([]string{"bootstrap", "git", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}, tt.args...))
			err := root.Execute()
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(err.Error()).NotTo(ContainSubstring("pa55word"))
			g.Expect(strings.TrimSpace(out.String())).To(BeEmpty())
		})
	}
}
