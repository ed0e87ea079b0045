package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// writeRules writes the rule file of o and promtool's tests of it into a
// folder of its own, and returns the folder.
func writeRules(t *testing.T, o RuleOptions) string {
	g := NewWithT(t)
	dir := t.TempDir()
	rules, err := RuleFile(o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600)).To(Succeed())
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o600)).To(Succeed())
	return dir
}

func TestRulesPassPromtoolsCheck(t *testing.T) {
	dir := writeRules(t, DefaultRuleOptions)
	out, err := exec.Command(testservers.Promtool(t), "check", "rules", filepath.Join(dir, "rules.yaml")).CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), string(out))
}

func TestRulesFireAndResolve(t *testing.T) {
	dir := writeRules(t, DefaultRuleOptions)
	cmd := exec.Command(testservers.Promtool(t), "test", "rules", "rules_test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), string(out))
}
