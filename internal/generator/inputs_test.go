package generator

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

func TestInputs(t *testing.T) {
	tree := testutil.WriteTree(t, map[string]string{"apps/web/deploy.yaml": "a", "apps/web/values.yaml": "b", "README.md": "c"})
	trees := map[string]string{"mono": tree}
	for _, tc := range []struct {
		from string
		want Input
	}{
		{"@mono/apps/web/**", Input{Alias: "mono", Folder: "apps/web"}},
		{"@mono/apps/web/", Input{Alias: "mono", Folder: "apps/web"}},
		{"@mono/apps/web", Input{Alias: "mono", Folder: "apps/web"}},
		{"@mono/apps/web/values.yaml", Input{Alias: "mono", Folder: "apps/web"}},
		{"@mono/apps/*/deploy.yaml", Input{Alias: "mono", Folder: "apps"}},
		{"@mono/**/*.yaml", Input{Alias: "mono", Folder: ""}},
		{"@mono/README.md", Input{Alias: "mono", Folder: ""}},
		{"@mono/", Input{Alias: "mono", Folder: ""}},
		{"@mono/apps/missing", Input{Alias: "mono", Folder: "apps"}},
		{"@other/apps/web", Input{Alias: "other", Folder: "apps"}},
	} {
		t.Run(tc.from, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Inputs([]Rule{{From: tc.from, To: "@artifact/"}}, trees)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal([]Input{tc.want}))
		})
	}
	_, err := Inputs([]Rule{{From: "@mono/../etc", To: "@artifact/"}}, trees)
	NewWithT(t).Expect(err).To(HaveOccurred())
}
