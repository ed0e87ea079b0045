package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// platformGenerators are the reference's examples of a monorepo split, as
// they are written: one artifact per service, and one per folder of
// services/ through a pathPattern.
const platformGenerators = `apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: platform-services
spec:
  sources:
    - alias: monorepo
      kind: GitRepository
      name: platform-monorepo
  artifacts:
    - name: policies
      copy:
        - from: "@monorepo/platform/policy/**"
          to: "@artifact/"
    - name: auth-service
      copy:
        - from: "@monorepo/services/auth/deploy/**"
          to: "@artifact/"
          exclude: ["*.md"]
    - name: api-gateway
      copy:
        - from: "@monorepo/services/gateway/deploy/**"
          to: "@artifact/"
          exclude: ["*.md", "**/charts/**"]
---
apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: per-service
spec:
  sources:
    - alias: monorepo
      kind: GitRepository
      name: platform-monorepo
  pathPattern: "@monorepo/services/{service}"
  artifacts:
    - name: "{service}-deploy"
      copy:
        - from: "@monorepo/services/{service}/deploy/*.yaml"
          to: "@artifact/"
`

// platformRepo is the monorepo the generators split.
var platformRepo = map[string]string{
	"platform/policy/deny.yaml":              "kind: Policy\n",
	"services/auth/deploy/app.yaml":          "app: auth\n",
	"services/auth/deploy/README.md":         "auth\n",
	"services/gateway/deploy/app.yaml":       "app: gateway\n",
	"services/gateway/deploy/charts/c.yaml":  "chart\n",
	"services/gateway/deploy/notes/notes.md": "notes\n",
	"README.md":                              "platform\n",
}

// TestBuildArtifactGenerator: `build artifactgenerator` prints what each
// artifact of a generator (from a file, or from the cluster) would hold,
// built from local folders, and writes the files with --output; the same
// files give the same digest.
func TestBuildArtifactGenerator(t *testing.T) {
	g := NewWithT(t)
	repo := testutil.WriteTree(t, platformRepo)
	file := filepath.Join(t.TempDir(), "generators.yaml")
	g.Expect(os.WriteFile(file, []byte(platformGenerators), 0o600)).To(Succeed())

	out, _, err := run(t, "build", "artifactgenerator", "platform-services", "--dry-run", "--artifactgenerator-file", file, "--source", "monorepo="+repo)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "build-artifactgenerator", out)
	fromFile := out

	output := t.TempDir()
	out, _, err = run(t, "build", "ag", "per-service", "--dry-run", "--artifactgenerator-file", file, "--source", "monorepo="+repo, "--output", output)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "build-artifactgenerator-pathpattern", out)
	g.Expect(testutil.ReadTree(t, output)).To(Equal(map[string]string{
		"auth-deploy/app.yaml": "app: auth\n", "gateway-deploy/app.yaml": "app: gateway\n",
	}))
	_, _, err = run(t, "build", "ag", "per-service", "--dry-run", "--artifactgenerator-file", file, "--source", "monorepo="+repo, "--output", output)
	g.Expect(err).To(MatchError(ContainSubstring("exists already: choose an empty folder")))

	t.Run("from the cluster", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.CreateNamespace(t)
		gen := &sourceextv1beta1.ArtifactGenerator{}
		first, _, _ := strings.Cut(platformGenerators, "---\n")
		g.Expect(yaml.Unmarshal([]byte(first), gen)).To(Succeed())
		gen.Namespace = ns
		g.Expect(env.Client.Create(context.Background(), gen)).To(Succeed())
		fromCluster, _, err := run(t, "build", "artifactgenerator", "platform-services", "-n", ns, "--source", "monorepo="+repo)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fromCluster).To(Equal(fromFile))
	})
}

func TestBuildArtifactGeneratorBadInput(t *testing.T) {
	repo := testutil.WriteTree(t, platformRepo)
	file := filepath.Join(t.TempDir(), "generators.yaml")
	if err := os.WriteFile(file, []byte(platformGenerators), 0o600); err != nil {
		t.Fatal(err)
	}
	ag := []string{"build", "artifactgenerator", "platform-services", "--dry-run"}
	for name, tc := range map[string]struct {
		args    []string
		wantErr string
	}{
		"no source":            {append(ag, "--artifactgenerator-file", file), "--source ALIAS=DIR is required"},
		"a source not a pair":  {append(ag, "--artifactgenerator-file", file, "--source", repo), "is not ALIAS=DIR"},
		"a source not there":   {append(ag, "--artifactgenerator-file", file, "--source", "monorepo=/nonexistent"), `"/nonexistent" is not a folder`},
		"an alias left out":    {append(ag, "--artifactgenerator-file", file, "--source", "other="+repo), `no --source for the alias "monorepo"`},
		"dry run without file": {append(ag, "--source", "monorepo="+repo), "--dry-run needs --artifactgenerator-file"},
		"a copy that climbs":   {[]string{"build", "ag", "bad", "--dry-run", "--artifactgenerator-file", writeBadGenerator(t), "--source", "m=" + repo}, "stays inside its tree"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, tc.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

// writeBadGenerator writes a generator whose copy climbs out of its source.
func writeBadGenerator(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: bad}
spec:
  sources: [{alias: m, kind: GitRepository, name: m}]
  artifacts: [{name: out, copy: [{from: "@m/../../etc/passwd", to: "@artifact/"}]}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
