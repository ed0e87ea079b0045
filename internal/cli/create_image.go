package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/template"
	"time"

	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/imagepolicy"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/registry"
)

// newCreateImageCommand returns `create image`, the group of the image
// automation kinds.
func newCreateImageCommand(f *createFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Create or update ImageRepositories, ImagePolicies and ImageUpdateAutomations"}
	cmd.AddCommand(newCreateImageRepositoryCommand(f), newCreateImagePolicyCommand(f), newCreateImageUpdateCommand(f))
	return cmd
}

// imageRepoFlags are the flags of `create image repository`.
type imageRepoFlags struct {
	image                              string
	secretRef, certRef, proxySecretRef string
	insecure                           bool
	exclusions, accessFrom             []string
	interval, fetchTimeout             time.Duration
}

// maxExclusions is the most entries spec.exclusionList takes.
const maxExclusions = 25

func newCreateImageRepositoryCommand(f *createFlags) *cobra.Command {
	r := &imageRepoFlags{}
	cmd := &cobra.Command{
		Use:     "repository NAME",
		Aliases: []string{"imagerepository", "imgrepo"},
		Short:   "Create or update an ImageRepository: a container image repository whose tags are scanned",
		Long: `Create or update an ImageRepository (image.toolkit.fluxcd.io/v1): the image
reflector lists the tags of --image every --interval, leaves out those an
--exclusion matches (by default the cosign signatures, ^.*\.sig$), and keeps
them for the ImagePolicies that elect one (see ` + "`windlass image tags`" + `).

Credentials come from --secret-ref, a kubernetes.io/dockerconfigjson Secret
(see ` + "`windlass create secret oci`" + `).`,
		Example: `  windlass create image repository podinfo --image ghcr.io/stefanprodan/podinfo --interval 5m
  windlass create image repository app --image registry.example.com/org/app --secret-ref registry-auth --exclusion '^.*\.sig$' --exclusion '^sha-'
  windlass create image repository app --image ghcr.io/org/app --access-from-selector env=prod --export > app-images.yaml`,
		Args: nameArg,
		RunE: applyCreated(f, r.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&r.image, "image", "", "the repository to scan, like ghcr.io/org/app (no tag, no digest)")
	fs.StringVar(&r.secretRef, "secret-ref", "", "the dockerconfigjson Secret of the registry's credentials (see windlass create secret oci)")
	fs.StringVar(&r.certRef, "cert-ref", "", "the Secret with ca.crt (a CA to trust), tls.crt and tls.key (a client certificate)")
	fs.StringVar(&r.proxySecretRef, "proxy-secret-ref", "", "the Secret with the proxy's address, username and password")
	fs.BoolVar(&r.insecure, "insecure", false, "talk to the registry over plain HTTP")
	fs.StringArrayVar(&r.exclusions, "exclusion", nil, `a regular expression of tags to leave out (repeat; default ^.*\.sig$)`)
	fs.StringArrayVar(&r.accessFrom, "access-from-selector", nil, "labels (k=v[,k=v]) of namespaces whose ImagePolicies may use the repository (repeat for more namespaces)")
	fs.DurationVar(&r.interval, "interval", time.Minute, "how often the tags are listed")
	fs.DurationVar(&r.fetchTimeout, "fetch-timeout", 0, "how long a scan may take (the controller's default is the interval, at most 5m)")
	return cmd
}

// object returns the ImageRepository the flags declare, or the first flag
// that is wrong.
func (r *imageRepoFlags) object(name string, f *createFlags) (*imagev1.ImageRepository, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if err := checkImageRepository(r.image); err != nil {
		return nil, err
	}
	spec := imagev1.ImageRepositorySpec{Image: r.image, Insecure: r.insecure}
	if spec.Interval, err = positiveDuration("--interval", r.interval); err != nil {
		return nil, err
	}
	if spec.Timeout, err = optionalDuration("--fetch-timeout", r.fetchTimeout); err != nil {
		return nil, err
	}
	if spec.SecretRef, err = localRef("--secret-ref", r.secretRef); err != nil {
		return nil, err
	}
	if spec.CertSecretRef, err = localRef("--cert-ref", r.certRef); err != nil {
		return nil, err
	}
	if spec.ProxySecretRef, err = localRef("--proxy-secret-ref", r.proxySecretRef); err != nil {
		return nil, err
	}
	if len(r.exclusions) > maxExclusions {
		return nil, fmt.Errorf("--exclusion is given %d times: an ImageRepository takes at most %d", len(r.exclusions), maxExclusions)
	}
	for _, expr := range r.exclusions {
		if err := checkRegexp("--exclusion", expr); err != nil {
			return nil, err
		}
	}
	spec.ExclusionList = r.exclusions
	if spec.AccessFrom, err = parseAccessFrom(r.accessFrom); err != nil {
		return nil, err
	}
	return &imagev1.ImageRepository{ObjectMeta: om, Spec: spec}, nil
}

// checkImageRepository checks an --image as the image reflector reads it
// (registry.ParseImage): a repository such as ghcr.io/org/app or nginx,
// without a scheme, a tag or a digest; and without credentials, which are
// not echoed.
func checkImageRepository(image string) error {
	if image == "" {
		return errors.New("--image is required: the repository to scan, like ghcr.io/org/app")
	}
	if host, _, found := strings.Cut(image, "/"); found && strings.Contains(host, "@") {
		return errors.New("--image must not carry credentials: put them in a Secret (windlass create secret oci) and pass --secret-ref")
	}
	if _, err := registry.ParseImage(image); err != nil {
		return fmt.Errorf("--%v", err)
	}
	return nil
}

// parseAccessFrom parses the --access-from-selector values, one namespace
// selector each (k=v[,k=v]), or returns nil without any.
func parseAccessFrom(values []string) (*sourcev1.AccessFrom, error) {
	if len(values) == 0 {
		return nil, nil
	}
	access := &sourcev1.AccessFrom{}
	for _, v := range values {
		set, err := parseLabelSet("--access-from-selector", v)
		if err != nil {
			return nil, err
		}
		access.NamespaceSelectors = append(access.NamespaceSelectors, sourcev1.NamespaceSelector{MatchLabels: set})
	}
	return access, nil
}

// parseLabelSet parses the value of flag, labels as k=v[,k=v].
func parseLabelSet(flag, value string) (map[string]string, error) {
	set, err := labels.ConvertSelectorToLabelsMap(value)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %q is not labels k=v[,k=v]: %v", flag, value, err)
	case len(set) == 0:
		return nil, fmt.Errorf("%s %q is not labels k=v[,k=v]: it holds none", flag, value)
	}
	return set, nil
}

// imagePolicyFlags are the flags of `create image policy`.
type imagePolicyFlags struct {
	imageRef                   string
	semver, alpha, numeric     string
	filterRegex, filterExtract string
	reflectDigest              string
	interval                   time.Duration
}

func newCreateImagePolicyCommand(f *createFlags) *cobra.Command {
	p := &imagePolicyFlags{}
	cmd := &cobra.Command{
		Use:     "policy NAME",
		Aliases: []string{"imagepolicy", "imgpol"},
		Short:   "Create or update an ImagePolicy: the rule that elects the latest tag of an ImageRepository",
		Long: `Create or update an ImagePolicy (image.toolkit.fluxcd.io/v1): of the tags of the
ImageRepository --image-ref, it elects the highest in a semver range
(--select-semver), or the last in alphabetical (--select-alpha) or numerical
(--select-numeric) order; asc elects the greatest, desc the smallest.
--filter-regex keeps only the tags it matches, and --filter-extract orders them
by a part of the tag, written with the expression's groups ($ts, ${1}).

` + "`windlass image set POLICY TAG`" + ` pins a policy to one tag for a while.`,
		Example: `  windlass create image policy podinfo --image-ref podinfo --select-semver ">=6.0.0 <7.0.0"
  windlass create image policy app --image-ref app.infra --select-numeric asc --filter-regex '^main-[a-f0-9]+-(?P<ts>[0-9]+)' --filter-extract '$ts'
  windlass create image policy app --image-ref app --select-alpha desc --reflect-digest Always --interval 30m --export`,
		Args: nameArg,
		RunE: applyCreated(f, p.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&p.imageRef, "image-ref", "", "the ImageRepository: NAME, NAME.NAMESPACE or ImageRepository/NAMESPACE/NAME")
	fs.StringVar(&p.semver, "select-semver", "", "elect the highest tag in this semver range, like >=1.0.0 <2.0.0")
	fs.StringVar(&p.alpha, "select-alpha", "", "elect by alphabetical order: asc (the greatest) or desc (the smallest)")
	fs.StringVar(&p.numeric, "select-numeric", "", "elect by numerical order: asc (the greatest) or desc (the smallest)")
	fs.StringVar(&p.filterRegex, "filter-regex", "", "keep only the tags this regular expression matches")
	fs.StringVar(&p.filterExtract, "filter-extract", "", "with --filter-regex, order by this part of the tag, like $ts or ${1}")
	fs.StringVar(&p.reflectDigest, "reflect-digest", "", "when the elected tag's digest is looked up: Never (the default), IfNotPresent or Always")
	fs.DurationVar(&p.interval, "interval", 0, "with --reflect-digest Always, how often the digest is looked up again (the controller's default is 10m)")
	return cmd
}

// object returns the ImagePolicy the flags declare, or the first flag that
// is wrong.
func (p *imagePolicyFlags) object(name string, f *createFlags) (*imagev1.ImagePolicy, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if p.imageRef == "" {
		return nil, errors.New("--image-ref is required: the ImageRepository, NAME or NAME.NAMESPACE")
	}
	ref, err := parseKindRef("--image-ref", withDefaultKind(p.imageRef, imagev1.ImageRepositoryKind),
		[]string{imagev1.ImageRepositoryKind}, true)
	if err != nil {
		return nil, err
	}
	spec := imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: ref.name, Namespace: ref.namespace}}
	if spec.Policy, err = p.choice(); err != nil {
		return nil, err
	}
	spec.FilterTags = p.filter()
	if err := p.digest(&spec); err != nil {
		return nil, err
	}
	return &imagev1.ImagePolicy{ObjectMeta: om, Spec: spec}, nil
}

// withDefaultKind returns value as Kind/value when it names no kind.
func withDefaultKind(value, kind string) string {
	if strings.Contains(value, "/") {
		return value
	}
	return kind + "/" + value
}

// choice returns the rule of the one select flag given, checked as the
// image policy controller compiles it.
func (p *imagePolicyFlags) choice() (imagev1.ImagePolicyChoice, error) {
	var c imagev1.ImagePolicyChoice
	given := 0
	for _, v := range []string{p.semver, p.alpha, p.numeric} {
		if v != "" {
			given++
		}
	}
	switch {
	case given != 1:
		return c, errors.New("pass exactly one of --select-semver, --select-alpha and --select-numeric")
	case p.filterExtract != "" && p.filterRegex == "":
		return c, errors.New("--filter-extract needs --filter-regex: it is written with the groups of that expression")
	}
	_, err := imagepolicy.Compile(imagepolicy.Spec{SemverRange: p.semver, Alphabetical: p.alpha, Numerical: p.numeric,
		FilterPattern: p.filterRegex, FilterExtract: p.filterExtract})
	var invalid *imagepolicy.InvalidSpecError
	if errors.As(err, &invalid) {
		if flag, ok := policyFieldFlags[invalid.Field]; ok {
			return c, fmt.Errorf("%s %q is not valid: %v", flag, invalid.Value, invalid.Err)
		}
	}
	if err != nil {
		return c, err
	}
	switch {
	case p.semver != "":
		c.SemVer = &imagev1.SemVerPolicy{Range: p.semver}
	case p.alpha != "":
		c.Alphabetical = &imagev1.AlphabeticalPolicy{Order: p.alpha}
	default:
		c.Numerical = &imagev1.NumericalPolicy{Order: p.numeric}
	}
	return c, nil
}

// policyFieldFlags are the flags of the ImagePolicy fields that
// imagepolicy.Compile checks.
var policyFieldFlags = map[string]string{
	"policy.semver.range":       "--select-semver",
	"policy.alphabetical.order": "--select-alpha",
	"policy.numerical.order":    "--select-numeric",
	"filterTags.pattern":        "--filter-regex",
	"filterTags.extract":        "--filter-extract",
}

// filter returns the tag filter of --filter-regex and --filter-extract.
func (p *imagePolicyFlags) filter() *imagev1.TagFilter {
	if p.filterRegex == "" {
		return nil
	}
	return &imagev1.TagFilter{Pattern: p.filterRegex, Extract: p.filterExtract}
}

// digest sets the digest reflection of --reflect-digest and --interval.
func (p *imagePolicyFlags) digest(spec *imagev1.ImagePolicySpec) error {
	switch policy := imagev1.ReflectionPolicy(p.reflectDigest); policy {
	case "", imagev1.ReflectNever, imagev1.ReflectIfNotPresent, imagev1.ReflectAlways:
		spec.DigestReflectionPolicy = policy
	default:
		return fmt.Errorf("--reflect-digest %q is not supported: choose Never, IfNotPresent or Always", p.reflectDigest)
	}
	if p.interval == 0 {
		return nil
	}
	if spec.DigestReflectionPolicy != imagev1.ReflectAlways {
		return errors.New("--interval is how often the digest is looked up again: it goes with --reflect-digest Always")
	}
	interval, err := positiveDuration("--interval", p.interval)
	spec.Interval = &interval
	return err
}

// imageUpdateFlags are the flags of `create image update`.
type imageUpdateFlags struct {
	gitRepoRef, path                 string
	checkoutBranch, pushBranch       string
	pushBranchTemplate, pushRefspec  string
	authorName, authorEmail          string
	commitTemplate, signingKeySecret string
	policySelector, pushOptions      []string
	interval                         time.Duration
}

func newCreateImageUpdateCommand(f *createFlags) *cobra.Command {
	u := &imageUpdateFlags{}
	cmd := &cobra.Command{
		Use:     "update NAME",
		Aliases: []string{"imageupdateautomation", "iua"},
		Short:   "Create or update an ImageUpdateAutomation: the commits of the images that policies elect",
		Long: `Create or update an ImageUpdateAutomation (image.toolkit.fluxcd.io/v1): every
--interval it clones the GitRepository --git-repo-ref at --checkout-branch,
rewrites the image fields under --git-repo-path that carry a marker such as
  image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
to what the ImagePolicies of its namespace (those --policy-selector selects)
elect, commits as --author-name <--author-email>, and pushes to --push-branch
(a branch per policy with --push-branch-template).

--commit-template is a Go text/template of the commit message, or a file that
holds one, over .AutomationObject, .Changed and .Values.`,
		Example: `  windlass create image update fleet --git-repo-ref fleet --git-repo-path ./clusters/prod --checkout-branch main --push-branch main \
    --author-name windlass --author-email windlass@example.com
  windlass create image update apps --git-repo-ref fleet.infra --checkout-branch main --push-branch-template 'update-{{ .Policy }}' \
    --author-email bot@example.com --commit-template ./commit.tmpl --policy-selector team=apps --export`,
		Args: nameArg,
		RunE: applyCreated(f, u.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&u.gitRepoRef, "git-repo-ref", "", "the GitRepository to update: NAME, NAME.NAMESPACE or GitRepository/NAMESPACE/NAME")
	fs.StringVar(&u.path, "git-repo-path", "", "the folder of the repository whose files are updated (default: the root)")
	fs.StringVar(&u.checkoutBranch, "checkout-branch", "", "the branch to check out (default: the GitRepository's)")
	fs.StringVar(&u.pushBranch, "push-branch", "", "the branch to push to, created when missing (default: the branch checked out)")
	fs.StringVar(&u.pushBranchTemplate, "push-branch-template", "", "a Go template of the branch to push to, over .AutomationObject, .Policy and .Tag")
	fs.StringVar(&u.pushRefspec, "push-refspec", "", "a refspec to push as well, like refs/heads/main:refs/for/main")
	fs.StringArrayVar(&u.pushOptions, "push-option", nil, "a push option as key=value, like merge_request.create= (repeat)")
	fs.StringVar(&u.authorName, "author-name", "", "the name of the commits' author")
	fs.StringVar(&u.authorEmail, "author-email", "", "the email of the commits' author (required)")
	fs.StringVar(&u.commitTemplate, "commit-template", "", "the commit message's Go template, or a file that holds it")
	fs.StringVar(&u.signingKeySecret, "signing-key-secret", "", "the Secret with the key that signs the commits: git.asc (OpenPGP) or identity (SSH)")
	fs.StringArrayVar(&u.policySelector, "policy-selector", nil, "labels (k=v[,k=v]) of the ImagePolicies to apply (default: all of the namespace)")
	fs.DurationVar(&u.interval, "interval", time.Minute, "how often the automation runs")
	return cmd
}

// object returns the ImageUpdateAutomation the flags declare, or the first
// flag that is wrong.
func (u *imageUpdateFlags) object(name string, f *createFlags) (*imagev1.ImageUpdateAutomation, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if u.gitRepoRef == "" {
		return nil, errors.New("--git-repo-ref is required: the GitRepository to update, NAME or NAME.NAMESPACE")
	}
	ref, err := parseKindRef("--git-repo-ref", withDefaultKind(u.gitRepoRef, sourcev1.GitRepositoryKind),
		[]string{sourcev1.GitRepositoryKind}, true)
	if err != nil {
		return nil, err
	}
	spec := imagev1.ImageUpdateAutomationSpec{
		SourceRef: imagev1.CrossNamespaceSourceReference{Kind: ref.kind, Name: ref.name, Namespace: ref.namespace},
		Update:    &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: u.path},
	}
	if u.path != "" {
		if err := checkInsidePath("--git-repo-path", u.path); err != nil {
			return nil, err
		}
	}
	if spec.Interval, err = positiveDuration("--interval", u.interval); err != nil {
		return nil, err
	}
	if spec.GitSpec, err = u.gitSpec(); err != nil {
		return nil, err
	}
	if len(u.policySelector) > 0 {
		spec.PolicySelector = &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for _, v := range u.policySelector {
			set, err := parseLabelSet("--policy-selector", v)
			if err != nil {
				return nil, err
			}
			for k, v := range set {
				spec.PolicySelector.MatchLabels[k] = v
			}
		}
	}
	return &imagev1.ImageUpdateAutomation{ObjectMeta: om, Spec: spec}, nil
}

// gitSpec returns what to check out, how to commit and where to push.
func (u *imageUpdateFlags) gitSpec() (*imagev1.GitSpec, error) {
	if u.authorEmail == "" {
		return nil, errors.New("--author-email is required: the email of the commits' author")
	}
	git := &imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Name: u.authorName, Email: u.authorEmail}}}
	if u.checkoutBranch != "" {
		if err := checkBranch("--checkout-branch", u.checkoutBranch); err != nil {
			return nil, err
		}
		git.Checkout = &imagev1.GitCheckoutSpec{Reference: sourcev1.GitRepositoryRef{Branch: u.checkoutBranch}}
	}
	var err error
	if git.Commit.MessageTemplate, err = readCommitTemplate(u.commitTemplate); err != nil {
		return nil, err
	}
	if u.signingKeySecret != "" {
		if err := checkName("--signing-key-secret", u.signingKeySecret); err != nil {
			return nil, err
		}
		git.Commit.SigningKey = &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: u.signingKeySecret}}
	}
	git.Push, err = u.push()
	return git, err
}

// push returns where to push, or nil to push to the branch checked out.
func (u *imageUpdateFlags) push() (*imagev1.PushSpec, error) {
	if u.pushBranch != "" && u.pushBranchTemplate != "" {
		return nil, errors.New("--push-branch and --push-branch-template: choose one")
	}
	if u.pushBranch == "" && u.pushBranchTemplate == "" && u.pushRefspec == "" && len(u.pushOptions) == 0 {
		return nil, nil
	}
	push := &imagev1.PushSpec{Branch: u.pushBranch, BranchTemplate: u.pushBranchTemplate, Refspec: u.pushRefspec}
	if u.pushBranch != "" {
		if err := checkBranch("--push-branch", u.pushBranch); err != nil {
			return nil, err
		}
	}
	if u.pushBranchTemplate != "" {
		if _, err := template.New("branch").Parse(u.pushBranchTemplate); err != nil {
			return nil, fmt.Errorf("--push-branch-template is not a Go template: %v", err)
		}
	}
	if u.pushRefspec != "" {
		if err := gitconfig.RefSpec(u.pushRefspec).Validate(); err != nil {
			return nil, fmt.Errorf("--push-refspec %q is not a refspec (%v): write SRC:DST, like refs/heads/main:refs/for/main", u.pushRefspec, err)
		}
	}
	if len(u.pushOptions) > 0 {
		var err error
		if push.Options, err = parseKeyValues("--push-option", u.pushOptions); err != nil {
			return nil, err
		}
	}
	return push, nil
}

// checkBranch checks that the value of flag is a branch name git takes.
func checkBranch(flag, branch string) error {
	if err := plumbing.NewBranchReferenceName(branch).Validate(); err != nil || strings.HasPrefix(branch, "refs/") {
		return fmt.Errorf("%s %q is not a branch name", flag, branch)
	}
	return nil
}

// readCommitTemplate returns the commit message template of
// --commit-template, the file it names or the value itself, once the
// automation controller's parser (imageupdate.ParseMessageTemplate) takes
// it: it must parse, and must not use .Updated, which the commit data no
// longer has.
func readCommitTemplate(value string) (string, error) {
	if value == "" {
		return "", nil
	}
	text := value
	if info, err := os.Stat(value); err == nil && info.Mode().IsRegular() {
		b, err := os.ReadFile(value)
		if err != nil {
			return "", fmt.Errorf("reading --commit-template: %w", err)
		}
		text = string(b)
	}
	_, err := imageupdate.ParseMessageTemplate(text)
	switch {
	case errors.Is(err, imageupdate.ErrRemovedTemplateField):
		return "", errors.New("--commit-template uses .Updated, which was removed from the commit data: " +
			"range over .Changed.Changes (each with .OldValue, .NewValue and .Setter) or .Changed.FileChanges instead")
	case err != nil:
		return "", fmt.Errorf("--commit-template is not a Go template: %v", firstLine(err.Error()))
	}
	return text, nil
}
