package cli

import (
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// checkKubernetesVersion matches the version the control plane reports.
var checkKubernetesVersion = regexp.MustCompile(`Kubernetes \S+ >=`)

func TestCheckPre(t *testing.T) {
	g := NewWithT(t)
	out, _, err := run(t, "check", "--pre")
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "check-pre", checkKubernetesVersion.ReplaceAllString(out, "Kubernetes X.Y.Z >="))
}

func TestCheckAfterInstall(t *testing.T) {
	g := NewWithT(t)
	ns, _, _ := installForTest(t, g, "--split")
	out, _, err := run(t, "check", "-n", ns)
	g.Expect(err).To(MatchError("7 checks failed"))
	out = checkKubernetesVersion.ReplaceAllString(out, "Kubernetes X.Y.Z >=")
	expectGolden(t, g, "check-installed", strings.ReplaceAll(out, ns, "NAMESPACE"))

	out, _, err = run(t, "check", "-n", env.CreateNamespace(t))
	g.Expect(err).To(MatchError("1 check failed"))
	g.Expect(out).To(MatchRegexp(`(?m)^✗ no Windlass Deployment in namespace \S+: run windlass install -n \S+$`))
}
