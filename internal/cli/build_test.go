package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
)

// buildFixture is the folder that the build tests build: a ConfigMap with
// variables, a Secret and a SOPS-encrypted Secret.
var buildFixture = filepath.Join("testdata", "build", "app")

// TestBuild builds the fixture folder with the spec of a Kustomization in
// the cluster: its name prefix, target namespace and substitution, with
// variables read from a ConfigMap of the cluster; the Secret's values are
// masked, the SOPS-encrypted one is printed as it is.
func TestBuild(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-vars"},
		Data: map[string]string{"region": "eu-west", "greeting": "overridden"}})).To(Succeed())
	ks := &kustomizev1.Kustomization{}
	g.Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
metadata: {name: app, namespace: %s}
spec:
  interval: 1h
  path: ./somewhere/else
  sourceRef: {kind: GitRepository, name: app}
  namePrefix: prod-
  targetNamespace: %s-target
  postBuild:
    substitute: {greeting: hello, replicas: "3"}
    substituteFrom:
    - {kind: ConfigMap, name: cluster-vars}
    - {kind: Secret, name: optional-vars, optional: true}
`, ns, ns)), ks)).To(Succeed())
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())

	out, errOut, err := run(t, "build", "kustomization", "app", "-n", ns, "--path", buildFixture)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(errOut).To(BeEmpty())
	g.Expect(out).NotTo(ContainSubstring("s3cret"), "the Secret's values are masked")
	g.Expect(out).NotTo(ContainSubstring("dG9wLXNlY3JldA=="))
	g.Expect(out).To(ContainSubstring("ENC[AES256_GCM"), "the SOPS-encrypted Secret is printed as it is")
	expectGolden(t, g, "build-kustomization", strings.ReplaceAll(out, ns, "NS"))

	t.Run("--kustomization-file replaces the spec of the cluster", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run(t, "build", "ks", "app", "-n", ns, "--path", buildFixture,
			"--kustomization-file", filepath.Join("testdata", "build", "app-kustomization.yaml"))
		g.Expect(err).To(MatchError(ContainSubstring("substituteFrom ConfigMap " + ns + "/other-vars not found: create it, or mark it optional")))
		g.Expect(out).To(BeEmpty())
	})
	t.Run("--strict-substitute fails on a variable without a value", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "build", "ks", "app", "-n", ns, "--path", writeFolder(t, map[string]string{
			"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {v: \"${unset}\"}\n",
		}), "--strict-substitute")
		g.Expect(err).To(MatchError(ContainSubstring("unset")))
	})
}

// TestBuildDryRun builds without a cluster: the kubeconfig does not exist,
// the spec comes from --kustomization-file, or is empty.
func TestBuildDryRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-kubeconfig")
	build := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetArgs(append([]string{"build", "kustomization", "app", "--path", buildFixture, "--dry-run", "--kubeconfig", missing}, args...))
		err := root.Execute()
		return out.String(), errOut.String(), err
	}
	t.Run("with a Kustomization file", func(t *testing.T) {
		g := NewWithT(t)
		out, errOut, err := build("--kustomization-file", filepath.Join("testdata", "build", "app-kustomization.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(errOut).To(Equal("note: without a cluster (--dry-run), the variables of ConfigMap flux-system/other-vars (substituteFrom) are not read\n"))
		expectGolden(t, g, "build-dry-run", out)
	})
	t.Run("with the defaults", func(t *testing.T) {
		g := NewWithT(t)
		out, errOut, err := build()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(errOut).To(Equal("note: --dry-run without --kustomization-file builds with an empty spec: no overlay applies, and no ${variable} is substituted\n"))
		g.Expect(out).To(ContainSubstring("name: settings\n"), "no prefix")
		g.Expect(out).To(ContainSubstring("greeting: ${greeting} from ${region:=nowhere}"), "no substitution without postBuild")
		g.Expect(out).To(ContainSubstring("kustomize.toolkit.fluxcd.io/namespace: flux-system"))
	})
	t.Run("a Kustomization file without that Kustomization", func(t *testing.T) {
		g := NewWithT(t)
		var out, errOut bytes.Buffer
		root := NewRootCommand(&out, &errOut)
		root.SetArgs([]string{"build", "ks", "web", "--path", buildFixture, "--dry-run", "--kubeconfig", missing,
			"--kustomization-file", filepath.Join("testdata", "build", "app-kustomization.yaml")})
		g.Expect(root.Execute()).To(MatchError(ContainSubstring(`holds no Kustomization "web" (it holds app): check the name`)))
	})
}

func TestBuildBadInput(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "a missing folder", args: []string{"build", "ks", "app", "-n", ns, "--dry-run", "--path", filepath.Join(t.TempDir(), "nothing")},
			wantErr: "does not exist: pass --path the local folder of the Kustomization's manifests"},
		{name: "no --path", args: []string{"build", "ks", "app", "-n", ns},
			wantErr: "--path is required"},
		{name: "a file for --path", args: []string{"build", "ks", "app", "-n", ns, "--path", filepath.Join(buildFixture, "settings.yaml")},
			wantErr: "is not a folder"},
		{name: "a Kustomization that does not exist", args: []string{"build", "ks", "nothing", "-n", ns, "--path", buildFixture},
			wantErr: "Kustomization " + ns + "/nothing not found: check its name and -n, or pass --kustomization-file"},
		{name: "a folder that does not build", args: []string{"build", "ks", "app", "--dry-run", "--path",
			writeFolder(t, map[string]string{"kustomization.yaml": "resources: [missing.yaml]\n"})},
			wantErr: "missing.yaml"},
		{name: "a duplicate key", args: []string{"build", "ks", "app", "--dry-run", "--path",
			writeFolder(t, map[string]string{"kustomization.yaml": "resources: [web.yaml]\n", "web.yaml": duplicateKey})},
			wantErr: `ConfigMap demo/web in web.yaml (document 0 of the build): yaml: line 8: mapping key "extra" already defined at line 7`},
		{name: "a duplicate key without a kustomization", args: []string{"build", "ks", "app", "--dry-run", "--path",
			writeFolder(t, map[string]string{"web.yaml": duplicateKey})},
			wantErr: `"web.yaml": not valid YAML: yaml: unmarshal errors: line 8: mapping key "extra" already defined at line 7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := run(t, tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			var exit *ExitError
			g.Expect(errors.As(err, &exit)).To(BeFalse())
		})
	}
}

// duplicateKey is a ConfigMap with the key extra twice.
const duplicateKey = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: demo\ndata:\n  extra: a\n  extra: b\n"

// writeFolder writes files into a new folder and returns it.
func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
