package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/oci"
)

// helmRepoFlags are the flags of `create source helm`.
type helmRepoFlags struct {
	url                    string
	secretRef, certRef     string
	provider               string
	passCredentials        bool
	insecure               bool
	interval, fetchTimeout time.Duration
}

func newCreateSourceHelmCommand(f *createFlags) *cobra.Command {
	h := &helmRepoFlags{}
	cmd := &cobra.Command{
		Use:     "helm NAME",
		Aliases: []string{"helmrepository", "helmrepo"},
		Short:   "Create or update a HelmRepository",
		Long: `Create or update a HelmRepository: a Helm chart repository, either an HTTP
repository whose index.yaml the source controller fetches (an http:// or
https:// --url), or an OCI registry of charts (an oci:// --url, type oci),
which HelmCharts pull from directly.

Credentials come from --secret-ref, a Secret with username and password (see
` + "`windlass create secret helm`" + `); they go to the repository's own host only,
unless --pass-credentials lets them follow the index to other hosts.
--cert-secret-ref names a Secret with ca.crt, tls.crt and tls.key.`,
		Example: `  windlass create source helm podinfo --url https://stefanprodan.github.io/podinfo
  windlass create source helm bitnami --url oci://registry-1.docker.io/bitnamicharts --interval 1h
  windlass create source helm private --url https://charts.example.com --secret-ref charts-auth --cert-secret-ref charts-ca --export`,
		Args: nameArg,
		RunE: applyCreated(f, h.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&h.url, "url", "", "the repository: https://HOST/PATH (an index.yaml) or oci://HOST/REPOSITORY (charts in a registry)")
	fs.StringVar(&h.secretRef, "secret-ref", "", "the Secret with username and password (see windlass create secret helm)")
	fs.StringVar(&h.certRef, "cert-secret-ref", "", "the Secret with ca.crt (a CA to trust), tls.crt and tls.key (a client certificate)")
	fs.StringVar(&h.provider, "provider", "", "oci:// only: where the credentials come from: generic (the default; aws, azure and gcp are not served)")
	fs.BoolVar(&h.passCredentials, "pass-credentials", false, "send the credentials to the other hosts the index points at too (off: only to the repository's host)")
	fs.BoolVar(&h.insecure, "insecure", false, "oci:// only: talk to the registry over plain HTTP")
	fs.DurationVar(&h.interval, "interval", sourcev1.DefaultHelmRepositoryInterval, "how often the index is fetched again")
	fs.DurationVar(&h.fetchTimeout, "fetch-timeout", 0, "how long the index download or an OCI pull may take (the controller's default is 60s)")
	return cmd
}

// object returns the HelmRepository the flags declare, or the first flag
// that is wrong.
func (h *helmRepoFlags) object(name string, f *createFlags) (*sourcev1.HelmRepository, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	isOCI, err := checkHelmRepoURL(h.url)
	if err != nil {
		return nil, err
	}
	spec := sourcev1.HelmRepositorySpec{URL: h.url, Insecure: h.insecure, PassCredentials: h.passCredentials}
	if isOCI {
		spec.Type = sourcev1.HelmRepositoryTypeOCI
	}
	if err := h.checkForType(isOCI); err != nil {
		return nil, err
	}
	spec.Provider = h.provider
	if spec.Interval, err = positiveDuration("--interval", h.interval); err != nil {
		return nil, err
	}
	if spec.Timeout, err = optionalDuration("--fetch-timeout", h.fetchTimeout); err != nil {
		return nil, err
	}
	if spec.SecretRef, err = localRef("--secret-ref", h.secretRef); err != nil {
		return nil, err
	}
	if spec.CertSecretRef, err = localRef("--cert-secret-ref", h.certRef); err != nil {
		return nil, err
	}
	return &sourcev1.HelmRepository{ObjectMeta: om, Spec: spec}, nil
}

// checkForType refuses the flags that do not apply to the type of the
// repository.
func (h *helmRepoFlags) checkForType(isOCI bool) error {
	switch {
	case !isOCI && h.insecure:
		return errors.New("--insecure is for oci:// URLs: an http:// repository is plain HTTP already")
	case !isOCI && h.provider != "":
		return errors.New("--provider is for oci:// URLs: give an https:// repository's credentials with --secret-ref")
	case isOCI && h.passCredentials:
		return errors.New("--pass-credentials is for http(s) repositories, whose index may point at other hosts: an OCI registry serves its charts itself")
	case h.passCredentials && h.secretRef == "":
		return errors.New("--pass-credentials needs --secret-ref: it passes on the credentials of that Secret")
	}
	if err := servedProvider(h.provider); err != nil {
		return err
	}
	return nil
}

// checkHelmRepoURL checks a --url: an http(s) URL, or oci://HOST/REPOSITORY
// without a tag; never with credentials. It reports whether the URL is
// oci. The URL is not echoed, as it may hold credentials.
func checkHelmRepoURL(raw string) (isOCI bool, err error) {
	if raw == "" {
		return false, errors.New("--url is required: the repository, like https://stefanprodan.github.io/podinfo or oci://ghcr.io/org/charts")
	}
	if rest, ok := strings.CutPrefix(raw, oci.Scheme); ok {
		host, repo, _ := strings.Cut(rest, "/")
		switch {
		case strings.Contains(host, "@"):
			return true, errors.New("--url must not carry credentials: put them in a Secret (windlass create secret helm) and pass --secret-ref")
		case strings.ContainsAny(repo[strings.LastIndex(repo, "/")+1:], ":@"):
			return true, errors.New("--url names a tag or a digest: give the repository of the charts alone; the chart and its version go in the HelmChart")
		}
		if _, err := name.NewRepository(rest, name.StrictValidation); err != nil || repo == "" {
			return true, errors.New("--url is not a repository: write oci://HOST/REPOSITORY, in lower case, like oci://ghcr.io/org/charts")
		}
		return true, nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return false, errors.New("--url is not an absolute URL: write it like https://charts.example.com or oci://ghcr.io/org/charts")
	case u.Scheme != "http" && u.Scheme != "https":
		return false, fmt.Errorf("--url scheme %q is not supported: use https, http or oci", u.Scheme)
	case u.User != nil:
		return false, errors.New("--url must not carry credentials: put them in a Secret (windlass create secret helm) and pass --secret-ref")
	}
	return false, nil
}

// helmChartFlags are the flags of `create source chart`.
type helmChartFlags struct {
	source, chart, version   string
	reconcileStrategy        string
	valuesFiles              []string
	ignoreMissingValuesFiles bool
	interval                 time.Duration
}

// chartSourceKinds are the kinds a HelmChart is built from, HelmRepository
// (the default) first.
var chartSourceKinds = defaultFirst(kinds.Names(kinds.SourcesFor(kinds.HelmChartSource)), sourcev1.HelmRepositoryKind)

// defaultFirst returns names with def moved to the front.
func defaultFirst(names []string, def string) []string {
	out := []string{def}
	for _, n := range names {
		if n != def {
			out = append(out, n)
		}
	}
	return out
}

func newCreateSourceChartCommand(f *createFlags) *cobra.Command {
	h := &helmChartFlags{}
	cmd := &cobra.Command{
		Use:     "chart NAME",
		Aliases: []string{"helmchart", "hc"},
		Short:   "Create or update a HelmChart",
		Long: `Create or update a HelmChart: a chart that the source controller fetches from a
HelmRepository (--chart is its name, --chart-version a semver range), or
packages from a folder of a GitRepository or Bucket (--chart is the folder's
path), and serves as an artifact. A HelmRelease with --chart-ref HelmChart/NAME
installs it; a HelmRelease with --source makes its own HelmChart.`,
		Example: `  windlass create source chart podinfo --source HelmRepository/podinfo --chart podinfo --chart-version ">=6.0.0 <7.0.0"
  windlass create source chart app --source GitRepository/fleet --chart ./charts/app --reconcile-strategy Revision
  windlass create source chart podinfo --source HelmRepository/podinfo --chart podinfo --values-files values.yaml,values-prod.yaml --export`,
		Args: nameArg,
		RunE: applyCreated(f, h.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&h.source, "source", "", "the source of the chart, Kind/NAME in the namespace: HelmRepository, GitRepository or Bucket")
	fs.StringVar(&h.chart, "chart", "", "the chart's name in a HelmRepository, or its folder in a GitRepository or Bucket")
	fs.StringVar(&h.version, "chart-version", "", "HelmRepository only: a semver range of the chart's versions (the controller's default is *, the newest)")
	fs.StringVar(&h.reconcileStrategy, "reconcile-strategy", "", "what makes a new artifact: ChartVersion (a new chart version, the default) or Revision (a new source revision)")
	fs.StringSliceVar(&h.valuesFiles, "values-files", nil, "values files of the chart, merged in order into its values.yaml (repeat or separate with commas)")
	fs.BoolVar(&h.ignoreMissingValuesFiles, "ignore-missing-values-files", false, "skip the --values-files that do not exist instead of failing")
	fs.DurationVar(&h.interval, "interval", time.Minute, "how often the chart is checked for a new version")
	return cmd
}

// object returns the HelmChart the flags declare, or the first flag that
// is wrong.
func (h *helmChartFlags) object(name string, f *createFlags) (*sourcev1.HelmChart, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	ref, err := parseKindRef("--source", h.source, chartSourceKinds, false)
	if err != nil {
		return nil, err
	}
	tmpl, err := checkChartTemplate(ref.kind, h.chart, h.version, h.reconcileStrategy, h.valuesFiles)
	if err != nil {
		return nil, err
	}
	interval, err := positiveDuration("--interval", h.interval)
	if err != nil {
		return nil, err
	}
	return &sourcev1.HelmChart{ObjectMeta: om, Spec: sourcev1.HelmChartSpec{
		Chart: tmpl.chart, Version: tmpl.version, SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: ref.kind, Name: ref.name},
		Interval: interval, ReconcileStrategy: h.reconcileStrategy, ValuesFiles: h.valuesFiles,
		IgnoreMissingValuesFiles: h.ignoreMissingValuesFiles,
	}}, nil
}

// chartTemplate is what a chart's flags give, checked.
type chartTemplate struct {
	chart, version string
}

// checkChartTemplate checks the flags of a chart from a source of kind:
// --chart (a name, or a folder inside a Git or Bucket source),
// --chart-version (a semver range, HelmRepository only),
// --reconcile-strategy and --values-files (paths inside the chart's
// source).
func checkChartTemplate(kind, chart, version, strategy string, valuesFiles []string) (chartTemplate, error) {
	t := chartTemplate{chart: chart, version: version}
	if chart == "" {
		return t, errors.New("--chart is required: the chart's name in a HelmRepository, or its folder in a GitRepository or Bucket")
	}
	if err := checkInsidePath("--chart", chart); err != nil {
		return t, err
	}
	if version != "" {
		if kind != sourcev1.HelmRepositoryKind {
			return t, fmt.Errorf("--chart-version is for a HelmRepository: the chart of a %s is the one in its folder", kind)
		}
		if _, err := semver.NewConstraint(version); err != nil {
			return t, fmt.Errorf("--chart-version %q is not a semver range (%v): write it like 6.x or >=6.0.0 <7.0.0", version, err)
		}
	}
	switch strategy {
	case "", sourcev1.ReconcileStrategyChartVersion, sourcev1.ReconcileStrategyRevision:
	default:
		return t, fmt.Errorf("--reconcile-strategy %q is not supported: choose ChartVersion or Revision", strategy)
	}
	for _, v := range valuesFiles {
		if err := checkInsidePath("--values-files", v); err != nil {
			return t, err
		}
	}
	return t, nil
}

// checkInsidePath refuses a value of flag that is empty, absolute, or
// leaves its root through "..".
func checkInsidePath(flag, p string) error {
	clean := path.Clean(strings.TrimPrefix(p, "./"))
	if p == "" || strings.HasPrefix(p, "/") || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("%s %q leaves the source's root: give a relative path inside it, like ./charts/app", flag, p)
	}
	return nil
}

// helmSecretFlags are the flags of `create secret helm`.
type helmSecretFlags struct {
	gitSecretFlags
	certFile, keyFile string
}

func newCreateSecretHelmCommand(f *createFlags) *cobra.Command {
	s := &helmSecretFlags{}
	cmd := &cobra.Command{
		Use:   "helm NAME",
		Short: "Create or update the Secret of a HelmRepository's credentials",
		Long: `Create or update a Secret with the credentials of a Helm repository, in the keys
the HelmRepository controller reads: username and password (basic auth), and
ca.crt, tls.crt and tls.key (TLS; the HelmRepository's --cert-secret-ref may
name this Secret).

The Secret is printed only with --export, its data in base64 as kubectl
prints it.`,
		Example: `  windlass create secret helm charts-auth --username ci --password-stdin < token.txt
  windlass create secret helm charts-tls --ca-file ca.crt --cert-file tls.crt --key-file tls.key --export`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := s.readPasswordStdin(cmd.InOrStdin()); err != nil {
				return err
			}
			obj, err := s.object(args[0], f)
			if err != nil {
				return err
			}
			return f.apply(cmd, obj, false)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&s.username, "username", "u", "", "the user name")
	fs.StringVarP(&s.password, "password", "p", "", "the password or token")
	fs.StringVar(&s.caFile, "ca-file", "", "a PEM bundle of the CAs to trust")
	fs.StringVar(&s.certFile, "cert-file", "", "the PEM client certificate, with --key-file")
	fs.StringVar(&s.keyFile, "key-file", "", "the PEM private key of --cert-file")
	fs.BoolVar(&s.passwordStdin, "password-stdin", false, "read the password from standard input, not from the command line")
	return cmd
}

// object returns the Secret the flags declare, or the first flag that is
// wrong. No error holds the password or the key.
func (s *helmSecretFlags) object(name string, f *createFlags) (*corev1.Secret, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	switch {
	case (s.username == "") != (s.password == ""):
		return nil, errors.New("--username and --password go together: pass both")
	case (s.certFile == "") != (s.keyFile == ""):
		return nil, errors.New("--cert-file and --key-file go together: pass both")
	case s.username == "" && s.caFile == "" && s.certFile == "":
		return nil, errors.New("pass --username and --password, --ca-file, or --cert-file and --key-file")
	}
	data := map[string][]byte{}
	if s.username != "" {
		data[git.SecretKeyUsername], data[git.SecretKeyPassword] = []byte(s.username), []byte(s.password)
	}
	if s.caFile != "" {
		if data[git.SecretKeyCACert], err = readCAFile(s.caFile); err != nil {
			return nil, err
		}
	}
	if s.certFile != "" {
		if data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey], err = readKeyPair(s.certFile, s.keyFile); err != nil {
			return nil, err
		}
	}
	return &corev1.Secret{ObjectMeta: om, Data: data}, nil
}

// readKeyPair reads --cert-file and --key-file and checks that they are a
// certificate and its private key.
func readKeyPair(certFile, keyFile string) (cert, key []byte, err error) {
	if cert, err = os.ReadFile(certFile); err != nil {
		return nil, nil, fmt.Errorf("reading --cert-file: %w", err)
	}
	if key, err = os.ReadFile(keyFile); err != nil {
		return nil, nil, fmt.Errorf("reading --key-file: %w", err)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		// The error of X509KeyPair never holds the key.
		return nil, nil, fmt.Errorf("--cert-file and --key-file are not a PEM certificate and its private key: %v", err)
	}
	return cert, key, nil
}

// parseKindRef parses the value of flag, Kind/NAME with Kind one of kinds
// (in any case); with crossNamespace also Kind/NAMESPACE/NAME, and
// Kind/NAME.NAMESPACE as the flux CLI writes it (a name with dots then
// needs the Kind/NAMESPACE/NAME form). The namespace is empty when not
// given.
func parseKindRef(flag, value string, kinds []string, crossNamespace bool) (kindRef, error) {
	return parseKindRefOf(flag, value, kinds, crossNamespace, false)
}

// parseKindSelector parses the value of flag as parseKindRef does across
// namespaces, and takes '*' for a name too: every object of the kind (an
// Alert's event source, a Receiver's resource).
func parseKindSelector(flag, value string, kinds []string) (kindRef, error) {
	return parseKindRefOf(flag, value, kinds, true, true)
}

// parseKindRefOf is parseKindRef, with '*' taken for a name when wildcard
// is set.
func parseKindRefOf(flag, value string, kinds []string, crossNamespace, wildcard bool) (kindRef, error) {
	form := "Kind/NAME"
	if crossNamespace {
		form = "Kind/[NAMESPACE/]NAME or Kind/NAME.NAMESPACE"
	}
	if value == "" {
		return kindRef{}, fmt.Errorf("%s is required: %s, Kind one of %s", flag, form, strings.Join(kinds, ", "))
	}
	parts := strings.Split(value, "/")
	if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && !crossNamespace) {
		return kindRef{}, fmt.Errorf("%s %q is not %s, Kind one of %s", flag, value, form, strings.Join(kinds, ", "))
	}
	ref := kindRef{name: parts[len(parts)-1]}
	for _, k := range kinds {
		if strings.EqualFold(k, parts[0]) {
			ref.kind = k
		}
	}
	if ref.kind == "" {
		return ref, fmt.Errorf("%s kind %q is not one of %s", flag, parts[0], strings.Join(kinds, ", "))
	}
	switch {
	case len(parts) == 3:
		ref.namespace = parts[1]
	case crossNamespace && strings.Contains(ref.name, "."):
		i := strings.LastIndex(ref.name, ".")
		ref.name, ref.namespace = ref.name[:i], ref.name[i+1:]
	}
	if ref.namespace != "" {
		if errs := validation.IsDNS1123Label(ref.namespace); len(errs) > 0 {
			return ref, fmt.Errorf("%s namespace %q is not a namespace name: %s", flag, ref.namespace, errs[0])
		}
	}
	if wildcard && ref.name == "*" {
		return ref, nil
	}
	return ref, checkName(flag, ref.name)
}
