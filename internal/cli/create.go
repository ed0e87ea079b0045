package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
)

// fieldOwner is the field manager of the objects that `create` applies.
const fieldOwner = "windlass"

// createFlags are the flags that every `create` command shares.
type createFlags struct {
	verbFlags
	// export prints the object instead of applying it.
	export bool
	// labels are key=value pairs set on the object.
	labels []string
}

func newCreateCommand() *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create or update sources, ArtifactGenerators, Kustomizations, HelmReleases, their secrets, Gates, Alerts, Receivers and image automation",
		Long: `Create an object, or update it when it exists (server-side apply, field
owner "windlass"), then wait until its controller has reconciled it and print
the outcome; the exit code is not zero when it is not Ready.

With --export the object is printed as YAML instead, ready to commit to Git,
and no cluster is needed.`,
	}
	f.bindWaiting(cmd)
	fs := cmd.PersistentFlags()
	fs.BoolVar(&f.export, "export", false, "print the object as YAML instead of applying it (no cluster needed)")
	fs.StringSliceVar(&f.labels, "label", nil, "set a label, as key=value (repeat the flag or separate with commas)")
	source := &cobra.Command{Use: "source", Short: "Create or update sources"}
	source.AddCommand(newCreateSourceGitCommand(f), newCreateSourceOCICommand(f), newCreateSourceBucketCommand(f),
		newCreateSourceHelmCommand(f), newCreateSourceChartCommand(f))
	secret := newCreateSecretCommand(f)
	secret.AddCommand(newCreateSecretHelmCommand(f))
	cmd.AddCommand(source, newCreateArtifactGeneratorCommand(f), newCreateKustomizationCommand(f), newCreateHelmReleaseCommand(f), secret, newCreateGateCommand(f),
		newCreateProviderCommand(f), newCreateAlertCommand(f), newCreateReceiverCommand(f), newCreateImageCommand(f))
	return cmd
}

// gitSourceFlags are the flags of `create source git`.
type gitSourceFlags struct {
	url, branch, tag, semver, commit string
	secretRef, provider              string
	ignorePaths                      []string
	recurseSubmodules                bool
	interval                         time.Duration
}

func newCreateSourceGitCommand(f *createFlags) *cobra.Command {
	g := &gitSourceFlags{}
	cmd := &cobra.Command{
		Use:     "git NAME",
		Aliases: []string{"gitrepository"},
		Short:   "Create or update a GitRepository",
		Example: `  windlass create source git podinfo --url https://github.com/stefanprodan/podinfo --branch master
  windlass create source git app --url ssh://git@github.com/org/app --tag-semver ">=1.0.0" --secret-ref app-auth
  windlass create source git app --url https://github.com/org/app --branch main --export > app-source.yaml
  windlass create source git app --url https://github.com/org/app --branch main --provider github --secret-ref github-app`,
		Args: nameArg,
		RunE: g.createGitSource(f),
	}
	fs := cmd.Flags()
	fs.StringVar(&g.url, "url", "", "the repository's URL: http, https or ssh (ssh://git@host/path)")
	fs.StringVar(&g.branch, "branch", "", "the branch to follow (default master; without it, a remote with no master is followed at its default branch)")
	fs.StringVar(&g.tag, "tag", "", "the tag to check out")
	fs.StringVar(&g.semver, "tag-semver", "", "the highest tag in this semver range, like >=1.0.0 <2.0.0")
	fs.StringVar(&g.commit, "commit", "", "the commit SHA to check out (with --branch, a shallow clone of that branch)")
	fs.StringVar(&g.secretRef, "secret-ref", "", "the Secret with the credentials, made with windlass create secret git (or githubapp)")
	fs.StringVar(&g.provider, "provider", "", "generic (default), or github: --secret-ref names a Secret with githubAppID, githubAppInstallationID and githubAppPrivateKey (and githubAppBaseURL for GitHub Enterprise)")
	fs.StringSliceVar(&g.ignorePaths, "ignore-paths", nil, "paths to leave out of the artifact, gitignore syntax (repeat or separate with commas)")
	fs.BoolVar(&g.recurseSubmodules, "recurse-submodules", false, "clone the submodules too")
	fs.DurationVar(&g.interval, "interval", time.Minute, "how often the remote is checked")
	return cmd
}

// object returns the GitRepository the flags declare, or the first flag
// that is wrong.
func (g *gitSourceFlags) object(name string, f *createFlags) (*sourcev1.GitRepository, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	u, err := parseGitURL(g.url)
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			return nil, errors.New("--url must not carry a password: put it in a Secret (windlass create secret git) and pass --secret-ref")
		}
	}
	interval, err := positiveDuration("--interval", g.interval)
	if err != nil {
		return nil, err
	}
	ref, err := g.ref()
	if err != nil {
		return nil, err
	}
	obj := &sourcev1.GitRepository{ObjectMeta: om, Spec: sourcev1.GitRepositorySpec{
		URL: g.url, Interval: interval, Reference: ref, RecurseSubmodules: g.recurseSubmodules,
	}}
	if g.secretRef != "" {
		if err := checkName("--secret-ref", g.secretRef); err != nil {
			return nil, err
		}
		obj.Spec.SecretRef = &meta.LocalObjectReference{Name: g.secretRef}
	}
	switch g.provider {
	case "", sourcev1.GitProviderGeneric:
	case sourcev1.GitProviderGitHub:
		if g.secretRef == "" {
			return nil, errors.New("--provider github needs --secret-ref: a Secret with the GitHub App's githubAppID, githubAppInstallationID and githubAppPrivateKey")
		}
	default:
		return nil, fmt.Errorf("--provider '%s' is not served by Windlass: use generic or github", g.provider)
	}
	obj.Spec.Provider = g.provider
	obj.Spec.Ignore = ignoreRules(g.ignorePaths)
	return obj, nil
}

// ref returns the reference the flags name: at most one of branch, tag and
// semver range, and a commit alone or with a branch.
func (g *gitSourceFlags) ref() (*sourcev1.GitRepositoryRef, error) {
	var given []string
	for flag, v := range map[string]string{"--branch": g.branch, "--tag": g.tag, "--tag-semver": g.semver} {
		if v != "" {
			given = append(given, flag)
		}
	}
	if len(given) > 1 || (g.commit != "" && (g.tag != "" || g.semver != "")) {
		return nil, errors.New("pass one of --branch, --tag, --tag-semver or --commit (--commit may go with --branch)")
	}
	if g.branch == "" && g.tag == "" && g.semver == "" && g.commit == "" {
		return nil, nil
	}
	return &sourcev1.GitRepositoryRef{Branch: g.branch, Tag: g.tag, SemVer: g.semver, Commit: g.commit}, nil
}

// ksFlags are the flags of `create kustomization`.
type ksFlags struct {
	source, path                         string
	prune, wait                          bool
	interval, healthCheckTimeout         time.Duration
	dependsOn                            []string
	targetNamespace, serviceAccount      string
	decryptionProvider, decryptionSecret string
}

func newCreateKustomizationCommand(f *createFlags) *cobra.Command {
	k := &ksFlags{}
	cmd := &cobra.Command{
		Use:     "kustomization NAME",
		Aliases: []string{"ks"},
		Short:   "Create or update a Kustomization",
		Example: `  windlass create kustomization podinfo --source podinfo --path ./kustomize --prune
  windlass create ks apps --source GitRepository/flux-system/fleet --path ./apps --depends-on infra --wait
  windlass create ks secrets --source fleet --path ./secrets --decryption-provider sops --decryption-secret sops-age --export`,
		Args: nameArg,
		RunE: applyCreated(f, k.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&k.source, "source", "", "the source of the manifests: [Kind/][namespace/]name, Kind defaults to GitRepository")
	fs.StringVar(&k.path, "path", "./", "the folder of the manifests in the source")
	fs.BoolVar(&k.prune, "prune", false, "delete the objects that leave the source")
	fs.BoolVar(&k.wait, "wait", false, "wait for every applied object to be healthy")
	fs.DurationVar(&k.interval, "interval", time.Minute, "how often the source is applied again")
	fs.DurationVar(&k.healthCheckTimeout, "health-check-timeout", 0, "how long build, apply and health checks may take (default: the interval)")
	fs.StringSliceVar(&k.dependsOn, "depends-on", nil, "what must be Ready first: [Kind/][NAMESPACE/]NAME, Kind Kustomization (the default) or HelmRelease (repeat or separate with commas)")
	fs.StringVar(&k.targetNamespace, "target-namespace", "", "put every namespaced object in this namespace")
	fs.StringVar(&k.serviceAccount, "service-account", "", "apply as this service account")
	fs.StringVar(&k.decryptionProvider, "decryption-provider", "", "decrypt secrets with this provider: sops")
	fs.StringVar(&k.decryptionSecret, "decryption-secret", "", "the Secret with the decryption keys (*.agekey, *.asc)")
	return cmd
}

// object returns the Kustomization the flags declare, or the first flag
// that is wrong.
func (k *ksFlags) object(name string, f *createFlags) (*kustomizev1.Kustomization, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	sourceRef, err := parseSourceRef(k.source)
	if err != nil {
		return nil, err
	}
	interval, err := positiveDuration("--interval", k.interval)
	if err != nil {
		return nil, err
	}
	if err := checkSourcePath(k.path); err != nil {
		return nil, err
	}
	obj := &kustomizev1.Kustomization{ObjectMeta: om, Spec: kustomizev1.KustomizationSpec{
		SourceRef: sourceRef, Path: k.path, Prune: k.prune, Wait: k.wait, Interval: interval,
		TargetNamespace: k.targetNamespace, ServiceAccountName: k.serviceAccount,
	}}
	if k.healthCheckTimeout != 0 {
		timeout, err := positiveDuration("--health-check-timeout", k.healthCheckTimeout)
		if err != nil {
			return nil, err
		}
		obj.Spec.Timeout = &timeout
	}
	if obj.Spec.DependsOn, err = parseKindedDependsOn(kustomizev1.KustomizationKind, k.dependsOn); err != nil {
		return nil, err
	}
	if obj.Spec.Decryption, err = k.decryption(); err != nil {
		return nil, err
	}
	return obj, k.checkNames()
}

// checkNames checks the names the flags give.
func (k *ksFlags) checkNames() error {
	if k.targetNamespace != "" {
		if errs := validation.IsDNS1123Label(k.targetNamespace); len(errs) > 0 {
			return fmt.Errorf("--target-namespace %q is not a namespace name: %s", k.targetNamespace, errs[0])
		}
	}
	if k.serviceAccount != "" {
		return checkName("--service-account", k.serviceAccount)
	}
	return nil
}

// decryption returns the decryption the flags ask for.
func (k *ksFlags) decryption() (*kustomizev1.Decryption, error) {
	switch {
	case k.decryptionProvider == "" && k.decryptionSecret == "":
		return nil, nil
	case k.decryptionProvider == "":
		return nil, errors.New("--decryption-secret needs --decryption-provider sops")
	case k.decryptionProvider != "sops":
		return nil, fmt.Errorf("--decryption-provider %q is not supported: use sops", k.decryptionProvider)
	}
	d := &kustomizev1.Decryption{Provider: k.decryptionProvider}
	if k.decryptionSecret != "" {
		if err := checkName("--decryption-secret", k.decryptionSecret); err != nil {
			return nil, err
		}
		d.SecretRef = &meta.LocalObjectReference{Name: k.decryptionSecret}
	}
	return d, nil
}

// sourceKinds are the kinds a Kustomization's source may be, the first the
// default.
var sourceKinds = kinds.Names(kinds.SourcesFor(kinds.KustomizationSource))

// parseSourceRef parses --source: [Kind/][namespace/]name. A first part
// that is a source kind (in any case) or that has capitals (which no
// namespace has) is a kind.
func parseSourceRef(s string) (kustomizev1.CrossNamespaceSourceReference, error) {
	ref := kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind}
	if s == "" {
		return ref, errors.New("--source is required: [Kind/][namespace/]name, like GitRepository/flux-system/podinfo")
	}
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return ref, fmt.Errorf("--source %q has too many parts: use [Kind/][namespace/]name", s)
	}
	if len(parts) == 3 || (len(parts) == 2 && looksLikeKind(parts[0])) {
		kind, ok := sourceKindNamed(parts[0])
		if !ok {
			return ref, fmt.Errorf("--source kind %q is not one of %s", parts[0], strings.Join(sourceKinds, ", "))
		}
		ref.Kind, parts = kind, parts[1:]
	}
	if len(parts) == 2 {
		ref.Namespace = parts[0]
		if errs := validation.IsDNS1123Label(ref.Namespace); len(errs) > 0 {
			return ref, fmt.Errorf("--source namespace %q is not a namespace name: %s", ref.Namespace, errs[0])
		}
	}
	ref.Name = parts[len(parts)-1]
	return ref, checkName("--source", ref.Name)
}

// looksLikeKind reports whether s is a kind rather than a namespace.
func looksLikeKind(s string) bool {
	_, known := sourceKindNamed(s)
	return known || strings.ToLower(s) != s
}

// sourceKindNamed returns the source kind s names, in any case.
func sourceKindNamed(s string) (string, bool) {
	for _, k := range sourceKinds {
		if strings.EqualFold(k, s) {
			return k, true
		}
	}
	return "", false
}

// parseDependsOn parses the --depends-on values, [namespace/]name each.
func parseDependsOn(values []string) ([]meta.DependencyReference, error) {
	var deps []meta.DependencyReference
	for _, v := range values {
		dep := meta.DependencyReference{Name: v}
		if ns, name, found := strings.Cut(v, "/"); found {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, fmt.Errorf("--depends-on %q: %q is not a namespace name", v, ns)
			}
			dep = meta.DependencyReference{Namespace: ns, Name: name}
		}
		if err := checkName("--depends-on", dep.Name); err != nil {
			return nil, err
		}
		deps = append(deps, dep)
	}
	return deps, nil
}

// checkSourcePath refuses a --path that leaves the source's root, as the
// controller would.
func checkSourcePath(p string) error {
	clean := path.Clean(strings.TrimPrefix(p, "./"))
	if strings.HasPrefix(p, "/") || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("--path %q leaves the source's root: give a relative path inside it, like ./deploy", p)
	}
	return nil
}

// parseGitURL checks a --url: an absolute http, https or ssh URL. The URL
// is not echoed, as it may hold credentials.
func parseGitURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("--url is required: the repository's http, https or ssh URL")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, errors.New("--url is not an absolute URL: write it like https://host/org/repo or ssh://git@host/org/repo")
	}
	switch u.Scheme {
	case "http", "https", "ssh":
		return u, nil
	}
	return nil, fmt.Errorf("--url scheme %q is not supported: use http, https or ssh", u.Scheme)
}

// positiveDuration returns d as an API duration when it is positive and
// whole milliseconds, which the API's pattern accepts.
func positiveDuration(flag string, d time.Duration) (metav1.Duration, error) {
	if d <= 0 || d%time.Millisecond != 0 {
		return metav1.Duration{}, fmt.Errorf("%s must be a positive duration of whole milliseconds, like 1m or 30s (got %s)", flag, d)
	}
	return metav1.Duration{Duration: d}, nil
}

// checkName checks that the value of flag is an object name.
func checkName(flag, name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%s %q is not an object name: %s", flag, name, errs[0])
	}
	return nil
}

// createGateFlags are the flags of `create gate`.
type createGateFlags struct {
	defaultState     string
	window, interval time.Duration
	schedules        []string
}

func newCreateGateCommand(f *createFlags) *cobra.Command {
	g := &createGateFlags{}
	cmd := &cobra.Command{
		Use:   "gate NAME",
		Short: "Create or update a Gate",
		Long: `Create or update a Gate (gating.toolkit.fluxcd.io/v1alpha1), which sources and
Kustomizations name in spec.gates to wait while it is closed; then wait until
the gating controller has decided its state, and print it.

A gate is in its --default state unless a request (windlass gate open, windlass
gate close) is in force, for --window from its time, or a schedule is active.
A --schedule is "open|close CRON for DURATION [in ZONE]": from every time the
five-field CRON names, in the IANA time ZONE (UTC by default), the gate is
opened or closed for DURATION; when schedules overlap, closing wins.`,
		Example: `  windlass create gate sre-approval --window 2h
  windlass create gate no-deploy-friday --default opened --schedule "close 0 0 * * FRI for 24h in Europe/Berlin"
  windlass create gate releases --schedule "open 0 9 * * MON-THU for 8h in America/New_York" --export`,
		Args: nameArg,
		RunE: applyCreated(f, g.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&g.defaultState, "default", string(gatingv1alpha1.GateClosed), "the state when no request and no schedule applies: opened or closed")
	fs.DurationVar(&g.window, "window", time.Hour, "how long an open or close request lasts before the gate returns to its default")
	fs.DurationVar(&g.interval, "interval", 30*time.Second, "how often the gate is evaluated again (transitions are evaluated on time)")
	fs.StringArrayVar(&g.schedules, "schedule", nil, `a recurring window, "open|close CRON for DURATION [in ZONE]" (repeat the flag)`)
	return cmd
}

// object returns the Gate the flags declare, or the first flag that is
// wrong; the gate is decided once, as the controller will, to check it.
func (g *createGateFlags) object(name string, f *createFlags) (*gatingv1alpha1.Gate, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	state := gatingv1alpha1.GateState(g.defaultState)
	if state != gatingv1alpha1.GateOpened && state != gatingv1alpha1.GateClosed {
		return nil, fmt.Errorf("--default %q is not a state: choose opened or closed", g.defaultState)
	}
	interval, err := positiveDuration("--interval", g.interval)
	if err != nil {
		return nil, err
	}
	window, err := positiveDuration("--window", g.window)
	if err != nil {
		return nil, err
	}
	obj := &gatingv1alpha1.Gate{ObjectMeta: om, Spec: gatingv1alpha1.GateSpec{Interval: &interval, Default: state, Window: &window}}
	for _, raw := range g.schedules {
		s, err := parseSchedule(raw)
		if err != nil {
			return nil, err
		}
		// Each schedule alone, so that the error names its flag.
		one := &gatingv1alpha1.Gate{Spec: gatingv1alpha1.GateSpec{Default: state, Window: &window, Schedules: []gatingv1alpha1.GateSchedule{s}}}
		if err := checkGate(one); err != nil {
			return nil, fmt.Errorf("--schedule %q: %w", raw, err)
		}
		obj.Spec.Schedules = append(obj.Spec.Schedules, s)
	}
	if err := checkGate(obj); err != nil {
		return nil, fmt.Errorf("invalid gate: %w", err)
	}
	return obj, nil
}

// checkGate decides g as the controller will, and returns what makes its
// spec invalid, without the field's path.
func checkGate(g *gatingv1alpha1.Gate) error {
	_, _, err := gate.Evaluate(g, time.Now())
	var specErr *gate.SpecError
	if !errors.As(err, &specErr) {
		return err
	}
	if inner := errors.Unwrap(specErr.Err); inner != nil {
		return inner
	}
	return specErr
}

// scheduleSyntax says how to write a --schedule.
const scheduleSyntax = `write "open|close CRON for DURATION [in ZONE]", like "close 0 0 * * FRI for 24h in Europe/Berlin"`

// parseSchedule parses a --schedule: "open|close CRON for DURATION [in
// ZONE]".
func parseSchedule(raw string) (gatingv1alpha1.GateSchedule, error) {
	var s gatingv1alpha1.GateSchedule
	fields := strings.Fields(raw)
	forAt := slices.Index(fields, "for")
	withZone := forAt >= 2 && forAt+4 == len(fields) && fields[forAt+2] == "in"
	if forAt < 2 || forAt+2 != len(fields) && !withZone {
		return s, fmt.Errorf("--schedule %q: %s", raw, scheduleSyntax)
	}
	s.Action = gatingv1alpha1.ScheduleAction(fields[0])
	if s.Action != gatingv1alpha1.ScheduleOpen && s.Action != gatingv1alpha1.ScheduleClose {
		return s, fmt.Errorf("--schedule %q: %q is not an action: choose open or close", raw, fields[0])
	}
	s.Cron = strings.Join(fields[1:forAt], " ")
	if strings.HasPrefix(s.Cron, "TZ=") || strings.HasPrefix(s.Cron, "CRON_TZ=") {
		return s, fmt.Errorf("--schedule %q: name the time zone at the end, \"in ZONE\", not in the cron", raw)
	}
	d, err := time.ParseDuration(fields[forAt+1])
	if err != nil {
		return s, fmt.Errorf("--schedule %q: %q is not a duration such as 24h or 90m", raw, fields[forAt+1])
	}
	if s.Duration, err = positiveDuration("the DURATION of --schedule "+strconv.Quote(raw), d); err != nil {
		return s, err
	}
	if withZone {
		s.TimeZone = fields[forAt+3]
	}
	return s, nil
}

// objectMeta returns the name, namespace and labels the flags give an
// object.
func (f *createFlags) objectMeta(name string) (metav1.ObjectMeta, error) {
	om := metav1.ObjectMeta{Name: name, Namespace: f.kube.namespace}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return om, fmt.Errorf("NAME %q is not an object name: %s", name, errs[0])
	}
	if errs := validation.IsDNS1123Label(om.Namespace); len(errs) > 0 {
		return om, fmt.Errorf("--namespace %q is not a namespace name: %s", om.Namespace, errs[0])
	}
	labels, err := parseLabelFlags(f.labels)
	om.Labels = labels
	return om, err
}

// parseLabelFlags parses the --label values, key=value each.
func parseLabelFlags(values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	labels := map[string]string{}
	for _, v := range values {
		key, value, found := strings.Cut(v, "=")
		if !found {
			return nil, fmt.Errorf("--label %q is not key=value", v)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("--label key %q is not valid: %s", key, errs[0])
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, fmt.Errorf("--label value %q is not valid: %s", value, errs[0])
		}
		labels[key] = value
	}
	return labels, nil
}

// applyCreated returns the RunE of a create command: it builds the object
// its one argument names with build, then applies it and waits for its
// controller's outcome (or prints it with --export).
func applyCreated[T client.Object](f *createFlags, build func(name string, f *createFlags) (T, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		obj, err := build(args[0], f)
		if err != nil {
			return err
		}
		return f.apply(cmd, obj, true)
	}
}

// apply prints obj with --export; else it applies obj and, when wait is
// set, waits for its controller's outcome.
func (f *createFlags) apply(cmd *cobra.Command, obj client.Object, wait bool) error {
	manifest, err := cleanManifest(obj)
	if err != nil {
		return err
	}
	if f.export {
		return writeManifest(cmd.OutOrStdout(), manifest)
	}
	desc := fmt.Sprintf("%s %s/%s", manifest.GetKind(), obj.GetNamespace(), obj.GetName())
	return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(manifest), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", desc, err)
		}
		fmt.Fprintf(w, "✚ %s applied\n", desc)
		if !wait {
			return nil
		}
		return leftBehind(f.waitCreated(ctx, c, w, manifest.GetKind(), obj), manifest.GetKind(), obj)
	})
}

// leftBehind adds to err, the failure of an object applied, that the object
// stays in the cluster and how to delete it.
func leftBehind(err error, kind string, obj client.Object) error {
	if err == nil {
		return nil
	}
	for _, k := range objectKinds {
		if k.kind == kind {
			return fmt.Errorf("%w (%s stays in the cluster, and its controller retries: create it again with other flags, or delete it with `windlass delete %s %s -n %s`)",
				err, k.describe(obj), strings.Join(k.words, " "), obj.GetName(), obj.GetNamespace())
		}
	}
	return err
}

// waitCreated waits for the outcome of the object just applied, unless it
// is suspended.
func (f *createFlags) waitCreated(ctx context.Context, c client.Client, w io.Writer, kind string, obj client.Object) error {
	for _, k := range objectKinds {
		if k.kind != kind {
			continue
		}
		if k.static {
			return reportStaticRefs(ctx, c, w, obj)
		}
		latest := k.new()
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
			return fmt.Errorf("reading %s back: %w", k.describe(obj), err)
		}
		if latest.IsSuspended() {
			fmt.Fprintf(w, "⚠ %s is suspended, so it is not reconciled: resume it with `windlass resume %s %s -n %s`\n",
				k.describe(obj), strings.Join(k.words, " "), obj.GetName(), obj.GetNamespace())
			return nil
		}
		if g, ok := latest.(*gatingv1alpha1.Gate); ok {
			// A gate has no outcome to wait for, but its state.
			fmt.Fprintf(w, "◎ waiting for %s to be evaluated\n", k.describe(obj))
			return f.waitGateEvaluated(ctx, c, w, g)
		}
		fmt.Fprintf(w, "◎ waiting for %s to be reconciled\n", k.describe(obj))
		return f.waitOutcome(ctx, c, w, k, latest, func(reconcilable) bool { return true })
	}
	return nil
}

// servedProvider refuses a --provider that Windlass does not serve: the
// clouds' workload identity (aws, azure, gcp), which would make an object
// that stalls. "" and generic are served.
func servedProvider(provider string) error {
	switch provider {
	case "", sourcev1.OCIProviderGeneric:
		return nil
	case sourcev1.OCIProviderAWS, sourcev1.OCIProviderAzure, sourcev1.OCIProviderGCP:
		return fmt.Errorf("--provider %s is not served by Windlass (the workload identity of cloud providers): "+
			"use generic, and give the credentials in a Secret with --secret-ref", provider)
	}
	return fmt.Errorf("--provider %q is not a provider: use generic", provider)
}
