package cli

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// commitTemplate is a commit message template over the commit data that
// the automation gives it.
const commitTemplate = `Update images of {{ .AutomationObject.Name }}

{{ range .Changed.Changes -}}
- {{ .OldValue }} -> {{ .NewValue }}
{{ end -}}
{{ with .Values.ticket }}Ticket: {{ . }}{{ end }}
`

// TestImageCreateExport prints the ImageRepositories, ImagePolicies and
// ImageUpdateAutomations that create makes with --export, with every flag,
// and compares them with their golden files.
func TestImageCreateExport(t *testing.T) {
	g := NewWithT(t)
	templateFile := writeTestFile(t, g, "commit.tmpl", []byte(commitTemplate))
	tests := []struct {
		golden string
		args   []string
	}{
		{golden: "image-create-repository", args: []string{"create", "image", "repository", "podinfo",
			"--image", "ghcr.io/stefanprodan/podinfo", "--interval", "5m", "--fetch-timeout", "90s", "--secret-ref", "ghcr-auth",
			"--cert-ref", "ghcr-ca", "--proxy-secret-ref", "proxy", "--insecure", "--exclusion", `^.*\.sig$`, "--exclusion", "^sha-",
			"--access-from-selector", "env=prod,team=apps", "--access-from-selector", "env=staging", "--label", "team=apps"}},
		{golden: "image-create-repository-docker-hub", args: []string{"create", "image", "imgrepo", "nginx", "-n", "apps", "--image", "nginx"}},
		{golden: "image-create-policy", args: []string{"create", "image", "policy", "podinfo", "--image-ref", "podinfo.infra",
			"--select-semver", ">=6.0.0 <7.0.0", "--filter-regex", `^v?(?P<version>[0-9.]+)$`, "--filter-extract", "$version",
			"--reflect-digest", "Always", "--interval", "30m", "--label", "team=apps"}},
		{golden: "image-create-policy-numerical", args: []string{"create", "image", "imgpol", "app", "-n", "apps",
			"--image-ref", "ImageRepository/infra/app", "--select-numeric", "asc", "--filter-regex", `^main-[a-f0-9]+-([0-9]+)`,
			"--filter-extract", "${1}", "--reflect-digest", "IfNotPresent"}},
		{golden: "image-create-policy-alphabetical", args: []string{"create", "image", "policy", "app", "--image-ref", "app",
			"--select-alpha", "desc"}},
		{golden: "image-create-update", args: []string{"create", "image", "update", "fleet", "--git-repo-ref", "fleet.infra",
			"--git-repo-path", "./clusters/prod", "--checkout-branch", "main", "--push-branch", "image-updates",
			"--push-refspec", "refs/heads/image-updates:refs/for/main", "--push-option", "merge_request.create=",
			"--push-option", "merge_request.target=main", "--author-name", "windlass", "--author-email", "windlass@example.com",
			"--commit-template", templateFile, "--signing-key-secret", "signing-key", "--interval", "10m",
			"--policy-selector", "team=apps", "--policy-selector", "env=prod", "--label", "team=apps"}},
		{golden: "image-create-update-branch-template", args: []string{"create", "image", "iua", "apps", "-n", "apps",
			"--git-repo-ref", "fleet", "--push-branch-template", "update-{{ .Policy }}-{{ .Tag }}", "--author-email", "bot@example.com",
			"--commit-template", "Update {{ len .Changed.Changes }} images"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := runWithInput(t, "", true, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errOut).To(BeEmpty())
			expectGolden(t, g, tt.golden, out)
		})
	}
}

// TestImageCreateBadFlags checks that wrong flags of the image kinds are
// refused in one line that names the flag, before anything reaches the
// cluster.
func TestImageCreateBadFlags(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	updatedTemplate := writeTestFile(t, g, "commit.tmpl", []byte("{{ range .Updated.Images }}{{ . }}\n{{ end }}"))
	repo := []string{"create", "image", "repository", "app", "-n", ns}
	withImage := slices.Clip(append(slices.Clone(repo), "--image", "ghcr.io/org/app"))
	policy := []string{"create", "image", "policy", "app", "-n", ns}
	withRef := slices.Clip(append(slices.Clone(policy), "--image-ref", "app"))
	update := []string{"create", "image", "update", "app", "-n", ns}
	withSource := slices.Clip(append(slices.Clone(update), "--git-repo-ref", "fleet"))
	withAuthor := slices.Clip(append(slices.Clone(withSource), "--author-email", "bot@example.com"))
	tests := []refusedFlags{
		{"repository: no image", repo, "--image is required"},
		{"repository: an image that is none", append(repo, "--image", "ghcr.io/Org/App"), `--image: "ghcr.io/Org/App" is not an image repository`},
		{"repository: an image with a tag", append(repo, "--image", "ghcr.io/org/app:v1"), `--image: "ghcr.io/org/app:v1" names a tag`},
		{"repository: an image with a digest", append(repo, "--image", "ghcr.io/org/app@"+testDigest), "names a digest: write the repository only"},
		{"repository: an image with a scheme", append(repo, "--image", "https://ghcr.io/org/app"), "has a URL scheme"},
		{"repository: an image with credentials", append(repo, "--image", "me:s3cr3t@ghcr.io/org/app"), "--image must not carry credentials"},
		{"repository: an exclusion that is no regexp", append(withImage, "--exclusion", "(sig"), `--exclusion "(sig" is not a regular expression`},
		{"repository: a zero interval", append(withImage, "--interval", "0s"), "--interval must be a positive duration"},
		{"repository: a bad secret name", append(withImage, "--secret-ref", "Auth_1"), `--secret-ref "Auth_1" is not an object name`},
		{"repository: a selector that is no labels", append(withImage, "--access-from-selector", "env"), `--access-from-selector "env" is not labels`},
		{"policy: no repository", append(policy, "--select-semver", "1.x"), "--image-ref is required"},
		{"policy: a repository of another kind", append(policy, "--image-ref", "GitRepository/app", "--select-semver", "1.x"),
			`--image-ref kind "GitRepository" is not one of ImageRepository`},
		{"policy: a bad namespace", append(policy, "--image-ref", "app.Infra", "--select-semver", "1.x"), `"Infra" is not a namespace name`},
		{"policy: no select flag", withRef, "pass exactly one of --select-semver, --select-alpha and --select-numeric"},
		{"policy: two select flags", append(withRef, "--select-semver", "1.x", "--select-alpha", "asc"), "pass exactly one of --select-semver"},
		{"policy: a range that is none", append(withRef, "--select-semver", "one or two"), `--select-semver "one or two" is not valid`},
		{"policy: another order", append(withRef, "--select-numeric", "up"), `--select-numeric "up" is not valid: must be "asc" or "desc"`},
		{"policy: a filter that is no regexp", append(withRef, "--select-alpha", "asc", "--filter-regex", "(v"), `--filter-regex "(v" is not valid: error parsing regexp`},
		{"policy: an extract without a filter", append(withRef, "--select-alpha", "asc", "--filter-extract", "$ts"), "--filter-extract needs --filter-regex"},
		{"policy: an extract of a missing group", append(withRef, "--select-numeric", "asc", "--filter-regex", "^(?P<ts>[0-9]+)$", "--filter-extract", "$time"),
			`--filter-extract "$time" is not valid: names "time", which is no group of filterTags.pattern`},
		{"policy: an extract of a group past the last", append(withRef, "--select-numeric", "asc", "--filter-regex", "^([0-9]+)$", "--filter-extract", "${2}"),
			`--filter-extract "${2}" is not valid`},
		{"policy: another digest policy", append(withRef, "--select-alpha", "asc", "--reflect-digest", "Sometimes"), `--reflect-digest "Sometimes" is not supported`},
		{"policy: an interval without Always", append(withRef, "--select-alpha", "asc", "--interval", "5m"), "it goes with --reflect-digest Always"},
		{"update: no source", append(update, "--author-email", "bot@example.com"), "--git-repo-ref is required"},
		{"update: a source of another kind", append(update, "--git-repo-ref", "OCIRepository/fleet", "--author-email", "bot@example.com"),
			`--git-repo-ref kind "OCIRepository" is not one of GitRepository`},
		{"update: no author email", withSource, "--author-email is required"},
		{"update: a path outside the repository", append(withAuthor, "--git-repo-path", "../other"), `--git-repo-path "../other" leaves the source's root`},
		{"update: a branch that is none", append(withAuthor, "--checkout-branch", "main..dev"), `--checkout-branch "main..dev" is not a branch name`},
		{"update: a push branch and a template", append(withAuthor, "--push-branch", "main", "--push-branch-template", "x-{{ .Tag }}"),
			"--push-branch and --push-branch-template: choose one"},
		{"update: a branch template that is none", append(withAuthor, "--push-branch-template", "x-{{ .Tag"), "--push-branch-template is not a Go template"},
		{"update: a commit template that is none", append(withAuthor, "--commit-template", "{{ range .Changed.Changes }}"), "--commit-template is not a Go template"},
		{"update: a commit template with .Updated", append(withAuthor, "--commit-template", "Updated {{ len .Updated.Images }} images"),
			"--commit-template uses .Updated, which was removed from the commit data"},
		{"update: a commit template file with .Updated", append(withAuthor, "--commit-template", updatedTemplate),
			"--commit-template uses .Updated"},
		{"update: .Updated through $", append(withAuthor, "--commit-template", "{{ range .Changed.Changes }}{{ $.Updated }}{{ end }}"),
			"--commit-template uses .Updated"},
		{"update: a refspec that is none", append(withAuthor, "--push-refspec", "refs/heads/main"), `--push-refspec "refs/heads/main" is not a refspec`},
		{"update: a push option without a value", append(withAuthor, "--push-option", "ci.skip"), `--push-option "ci.skip" is not key=value`},
		{"update: a bad signing key name", append(withAuthor, "--signing-key-secret", "Key_1"), `--signing-key-secret "Key_1" is not an object name`},
		{"update: a selector that is no labels", append(withAuthor, "--policy-selector", "team apps"), `--policy-selector "team apps" is not labels`},
	}
	expectRefused(t, tests)
	t.Run("nothing reached the cluster", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		var repos imagev1.ImageRepositoryList
		g.Expect(env.Client.List(ctx, &repos, client.InNamespace(ns))).To(Succeed())
		g.Expect(repos.Items).To(BeEmpty())
		var policies imagev1.ImagePolicyList
		g.Expect(env.Client.List(ctx, &policies, client.InNamespace(ns))).To(Succeed())
		g.Expect(policies.Items).To(BeEmpty())
		var automations imagev1.ImageUpdateAutomationList
		g.Expect(env.Client.List(ctx, &automations, client.InNamespace(ns))).To(Succeed())
		g.Expect(automations.Items).To(BeEmpty())
	})
}

// TestImageCreateAgainstTheCluster applies what create makes, with every
// flag, to the real API server, whose schema (and its validation rules)
// accepts it; no image controller reconciles these objects, so the wait
// for their outcome ends at --timeout.
func TestImageCreateAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	create := func(kind, name string, args ...string) {
		t.Helper()
		out, _, err := run(t, append([]string{"create", "image", kind, name, "-n", ns, "--timeout", "1s"}, args...)...)
		g.Expect(err).To(MatchError(ContainSubstring("was not reconciled within 1s")))
		g.Expect(out).To(HavePrefix("✚ "))
		g.Expect(out).To(ContainSubstring(ns + "/" + name + " applied\n◎ waiting for "))
	}

	create("repository", "app", "--image", "ghcr.io/org/app", "--interval", "5m", "--fetch-timeout", "1m", "--secret-ref", "auth",
		"--exclusion", "^sha-", "--access-from-selector", "env=prod", "--insecure")
	var repo imagev1.ImageRepository
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &repo)).To(Succeed())
	g.Expect(repo.Spec.Image).To(Equal("ghcr.io/org/app"))
	g.Expect(repo.Spec.Interval).To(Equal(metav1.Duration{Duration: 5 * time.Minute}))
	g.Expect(repo.Spec.ExclusionList).To(Equal([]string{"^sha-"}))
	g.Expect(repo.Spec.AccessFrom.NamespaceSelectors).To(Equal([]sourcev1.NamespaceSelector{{MatchLabels: map[string]string{"env": "prod"}}}))
	g.Expect(repo.ManagedFields).To(ContainElement(HaveField("Manager", fieldOwner)))

	create("policy", "app", "--image-ref", "app", "--select-semver", "^1.x", "--reflect-digest", "Always", "--interval", "15m")
	var policy imagev1.ImagePolicy
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &policy)).To(Succeed())
	g.Expect(policy.Spec.ImageRepositoryRef).To(Equal(meta.NamespacedObjectReference{Name: "app"}))
	g.Expect(policy.Spec.Policy.SemVer).To(Equal(&imagev1.SemVerPolicy{Range: "^1.x"}))
	g.Expect(policy.GetRequeueAfter()).To(Equal(15 * time.Minute))

	create("update", "fleet", "--git-repo-ref", "fleet", "--git-repo-path", "./apps", "--checkout-branch", "main",
		"--push-branch-template", "update-{{ .Policy }}", "--author-email", "bot@example.com", "--policy-selector", "team=apps")
	var automation imagev1.ImageUpdateAutomation
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet"}, &automation)).To(Succeed())
	g.Expect(automation.Spec.SourceRef).To(Equal(imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "fleet"}))
	g.Expect(automation.GetUpdatePath()).To(Equal("./apps"))
	g.Expect(automation.Spec.GitSpec.Push).To(Equal(&imagev1.PushSpec{BranchTemplate: "update-{{ .Policy }}"}))
	g.Expect(automation.Spec.PolicySelector.MatchLabels).To(Equal(map[string]string{"team": "apps"}))

	out, _, err := run(t, "create", "image", "policy", "held", "-n", ns, "--image-ref", "app", "--select-alpha", "asc", "--export")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("kind: ImagePolicy"))
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, &imagev1.ImagePolicy{})
	g.Expect(err).To(HaveOccurred(), "--export sends nothing")
}
