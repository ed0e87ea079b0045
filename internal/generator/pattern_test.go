package generator

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestParsePattern(t *testing.T) {
	tests := []struct {
		pattern, wantErr string
		names            []string
	}{
		{pattern: "@mono/apps/{app}", names: []string{"app"}},
		{pattern: "@mono/{env}/apps/app-{name}", names: []string{"env", "name"}},
		{pattern: "@mono/apps/{app", wantErr: "unbalanced brace"},
		{pattern: "@mono/apps/app}", wantErr: "unbalanced brace"},
		{pattern: "@mono/{1app}", wantErr: "capture '{1app}' must be a letter or _"},
		{pattern: "@mono/{a}/{a}", wantErr: "captures '{a}' twice"},
		{pattern: "@mono/", wantErr: "matches no folder"},
		{pattern: "@mono/../{a}", wantErr: "stays inside its tree"},
		{pattern: "mono/{a}", wantErr: "must be @<alias>/<path>"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			g := NewWithT(t)
			p, err := ParsePattern(tt.pattern)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Alias).To(Equal("mono"))
			g.Expect(p.Names).To(Equal(tt.names))
		})
	}
}

func TestPatternMatches(t *testing.T) {
	g := NewWithT(t)
	tree := testutil.WriteTree(t, map[string]string{
		"apps/Auth/deploy.yaml":       "a",
		"apps/gateway/deploy.yaml":    "g",
		"apps/gateway/sub/x.yaml":     "x",
		"apps/README.md":              "r",
		"prod/apps/app-web/x.yaml":    "w",
		"prod/apps/other/x.yaml":      "o",
		"staging/apps/app-api/x.yaml": "a",
	})
	p, err := ParsePattern("@mono/apps/{app}")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Matches(tree)).To(Equal([]Match{
		{Dir: "apps/Auth", Values: map[string]string{"app": "Auth"}},
		{Dir: "apps/gateway", Values: map[string]string{"app": "gateway"}},
	}), "one folder level, files are not folders, the case kept")

	p, err = ParsePattern("@mono/{env}/apps/app-{name}")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Matches(tree)).To(Equal([]Match{
		{Dir: "prod/apps/app-web", Values: map[string]string{"env": "prod", "name": "web"}},
		{Dir: "staging/apps/app-api", Values: map[string]string{"env": "staging", "name": "api"}},
	}))

	g.Expect(os.MkdirAll(filepath.Join(tree, "apps", ".hidden"), 0o755)).To(Succeed())
	p, err = ParsePattern("@mono/apps/{app}")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.Matches(tree)
	g.Expect(err).To(MatchError(ContainSubstring("folder 'apps/.hidden': the value '.hidden' of {app} is not a valid label value")))
}

func TestExpand(t *testing.T) {
	g := NewWithT(t)
	values := map[string]string{"app": "Auth", "env": "prod"}
	g.Expect(Expand("{app}-{env}", values, true)).To(Equal("auth-prod"))
	g.Expect(Expand("@mono/apps/{app}/**", values, false)).To(Equal("@mono/apps/Auth/**"))
	g.Expect(Expand("plain", values, false)).To(Equal("plain"))
	_, err := Expand("{app}-{region}", values, true)
	g.Expect(err).To(MatchError("'{app}-{region}' uses {region}, which the pathPattern does not capture"))
}
