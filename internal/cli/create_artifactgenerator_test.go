package cli

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/gitserver"
)

// TestCreateArtifactGeneratorBadFlags: flags that make no working
// generator are refused before anything reaches the cluster.
func TestCreateArtifactGeneratorBadFlags(t *testing.T) {
	ns := env.CreateNamespace(t)
	ag := []string{"create", "artifactgenerator", "apps", "-n", ns}
	src := []string{"--source", "mono=GitRepository/monorepo"}
	with := func(args ...string) []string { return append(append(append([]string{}, ag...), src...), args...) }
	expectRefused(t, []refusedFlags{
		{"no source", append(ag, "--copy", "a:@mono/a:@artifact/"), "--source is required"},
		{"a source without an alias", append(ag, "--source", "GitRepository/monorepo", "--copy", "a:@mono/a:@artifact/"), "is not ALIAS=Kind/[NAMESPACE/]NAME"},
		{"a source of an unknown kind", append(ag, "--source", "mono=HelmRepository/charts", "--copy", "a:@mono/a:@artifact/"), `--source kind "HelmRepository" is not one of`},
		{"an alias with capitals", append(ag, "--source", "Mono=GitRepository/monorepo", "--copy", "a:@Mono/a:@artifact/"), `the alias "Mono" is not lower-case`},
		{"an alias twice", with("--source", "mono=GitRepository/other", "--copy", "a:@mono/a:@artifact/"), "duplicate source alias 'mono'"},
		{"no copy", with(), "--copy is required"},
		{"a copy of two parts", with("--copy", "a:@mono/a"), `--copy "a:@mono/a" is not ARTIFACT:@ALIAS/FROM:@artifact/TO`},
		{"a copy from no alias", with("--copy", "a:mono/a:@artifact/"), `FROM "mono/a" is not @ALIAS/PATH`},
		{"a copy from an unknown alias", with("--copy", "a:@other/a:@artifact/"), "names the source alias 'other', which no source has"},
		{"a copy that climbs", with("--copy", "a:@mono/a:@artifact/../x"), `TO "@artifact/../x" is not @artifact/PATH inside the artifact`},
		{"a copy to no artifact", with("--copy", "a:@mono/a:/tmp/x"), `TO "/tmp/x" is not @artifact/PATH`},
		{"an unknown strategy", with("--copy", "a:@mono/a:@artifact/:Append"), `the strategy "Append" is not one of Overwrite, Merge, Extract`},
		{"an artifact that is no name", with("--copy", "A_1:@mono/a:@artifact/"), `the artifact "A_1" is not an object name`},
		{"a revision of no artifact", with("--copy", "a:@mono/a:@artifact/", "--revision", "b=@mono"), `names the artifact "b", which no --copy has`},
		{"a revision of no alias", with("--copy", "a:@mono/a:@artifact/", "--revision", "a=mono"), `--revision "a=mono" is not ARTIFACT=@ALIAS`},
		{"a pattern of an unknown alias", with("--path-pattern", "@other/apps/{app}", "--copy", "{app}:@mono/apps/{app}/**:@artifact/"),
			"pathPattern '@other/apps/{app}' names the source alias 'other'"},
	})
	t.Run("nothing reached the cluster", func(t *testing.T) {
		g := NewWithT(t)
		var gens sourceextv1beta1.ArtifactGeneratorList
		g.Expect(env.Client.List(context.Background(), &gens, client.InNamespace(ns))).To(Succeed())
		g.Expect(gens.Items).To(BeEmpty())
	})
}

// TestCreateArtifactGeneratorAgainstTheCluster: a generator created from
// flags splits a repository, the command reports its outcome, and its
// ExternalArtifacts are there.
func TestCreateArtifactGeneratorAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	srv.MustInitRepo(t, "mono.git", "main").MustCommit(t, "main",
		map[string]string{"apps/auth/app.yaml": "app: auth\n", "apps/web/app.yaml": "app: web\n"}, "one")
	controlled := "--label=" + controlledLabel + "=true"
	out, _, err := run(t, "create", "source", "git", "mono", "--url", base+"/mono.git", "--branch", "main", controlled, "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)

	out, _, err = run(t, "create", "artifactgenerator", "apps", "--source", "mono=GitRepository/mono", "--path-pattern", "@mono/apps/{app}",
		"--copy", "{app}:@mono/apps/{app}/**:@artifact/", controlled, "-n", ns, "--timeout", "1m")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal(fmt.Sprintf("✚ ArtifactGenerator %[1]s/apps applied\n◎ waiting for ArtifactGenerator %[1]s/apps to be reconciled\n"+
		"✔ ArtifactGenerator %[1]s/apps reconciled: generated 2 artifact(s)\n", ns)))
	for _, name := range []string{"auth", "web"} {
		var ea sourcev1.ExternalArtifact
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ea)).To(Succeed())
		g.Expect(ea.Status.Artifact).NotTo(BeNil())
	}
}
