package monitoring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestOperationsDocumentsEveryPanelAndAlert: docs/operations.md names each
// panel and has the runbook heading each alert links to.
func TestOperationsDocumentsEveryPanelAndAlert(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	g.Expect(err).NotTo(HaveOccurred())
	doc := string(data)
	words := strings.Join(strings.Fields(doc), " ") // a title may wrap
	for _, row := range Rows() {
		g.Expect(words).To(ContainSubstring("**"+row.Title+"**"), "row %q", row.Title)
		for _, p := range row.Panels {
			g.Expect(words).To(ContainSubstring("*"+p.Title+"*"), "panel %q", p.Title)
		}
	}
	for _, r := range RuleGroups(DefaultRuleOptions)[0].Rules {
		g.Expect(doc).To(ContainSubstring("\n#### "+r.Alert+"\n"), "alert %q", r.Alert)
	}
}
