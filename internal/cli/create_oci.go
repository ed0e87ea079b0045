package cli

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/oci"
)

// ociSourceFlags are the flags of `create source oci`.
type ociSourceFlags struct {
	url                               string
	tag, semver, semverFilter, digest string
	provider                          string
	secretRef, serviceAccount         string
	certRef, proxySecretRef           string
	insecure                          bool
	ignorePaths                       []string
	layerMediaType, layerOperation    string
	verifyProvider, verifySecretRef   string
	verifyIssuer, verifySubject       string
	verifyTrustedRoot                 string
	interval, fetchTimeout            time.Duration
}

func newCreateSourceOCICommand(f *createFlags) *cobra.Command {
	o := &ociSourceFlags{}
	cmd := &cobra.Command{
		Use:     "oci NAME",
		Aliases: []string{"ocirepository", "ocirepo"},
		Short:   "Create or update an OCIRepository",
		Long: `Create or update an OCIRepository: an artifact of a container registry (see
` + "`windlass push artifact`" + `) that the source controller pulls, verifies and serves.
The artifact is the one of --digest, else the highest tag in --tag-semver,
else --tag, else the tag latest.

Credentials come from --secret-ref (a kubernetes.io/dockerconfigjson Secret,
see ` + "`windlass create secret oci`" + `), from the imagePullSecrets of
--service-account, or from the cloud identity of --provider aws, azure or
gcp. --verify-provider cosign checks the artifact's signature before it is
stored: with the public keys of --verify-secret-ref, or keyless, signed by
an identity that --verify-issuer and --verify-subject match.`,
		Example: `  windlass create source oci podinfo --url oci://ghcr.io/stefanprodan/manifests/podinfo --tag-semver ">=6.0.0"
  windlass create source oci app --url oci://registry.example.com/org/app --tag latest --secret-ref registry-auth \
    --verify-provider cosign --verify-secret-ref cosign-keys
  windlass create source oci app --url oci://ghcr.io/org/app --digest sha256:3f0a... \
    --verify-provider cosign --verify-issuer "^https://token.actions.githubusercontent.com$" \
    --verify-subject "^https://github.com/org/app/" --export > app-source.yaml`,
		Args: nameArg,
		RunE: applyCreated(f, o.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.url, "url", "", "the repository: oci://HOST/REPOSITORY, without a tag")
	fs.StringVar(&o.tag, "tag", "", "the tag to pull (the controller's default is latest)")
	fs.StringVar(&o.semver, "tag-semver", "", "the highest tag in this semver range, like >=1.0.0 <2.0.0")
	fs.StringVar(&o.semverFilter, "semver-filter", "", "with --tag-semver, only the tags this regular expression matches")
	fs.StringVar(&o.digest, "digest", "", "the digest of the artifact to pull, sha256:<hex>")
	fs.StringVar(&o.provider, "provider", sourcev1.OCIProviderGeneric, "where the credentials come from: generic (aws, azure and gcp are not served)")
	fs.StringVar(&o.secretRef, "secret-ref", "", "the dockerconfigjson Secret of the registry's credentials (see windlass create secret oci)")
	fs.StringVar(&o.serviceAccount, "service-account", "", "the service account whose imagePullSecrets give the credentials")
	fs.StringVar(&o.certRef, "cert-ref", "", "the Secret with ca.crt (a CA to trust), tls.crt and tls.key (a client certificate)")
	fs.StringVar(&o.proxySecretRef, "proxy-secret-ref", "", "the Secret with the proxy's address, username and password")
	fs.BoolVar(&o.insecure, "insecure", false, "talk to the registry over plain HTTP")
	fs.StringSliceVar(&o.ignorePaths, "ignore-paths", nil, "paths to leave out of the artifact, gitignore syntax (repeat or separate with commas)")
	fs.StringVar(&o.layerMediaType, "layer-media-type", "", "the media type of the layer with the content (default: the first layer)")
	fs.StringVar(&o.layerOperation, "layer-operation", "", "what to do with the layer: extract (a tar.gz, the default) or copy")
	fs.StringVar(&o.verifyProvider, "verify-provider", "", "verify the artifact's signature with this provider: cosign")
	fs.StringVar(&o.verifySecretRef, "verify-secret-ref", "", "the Secret of the cosign public keys (*.pub) to verify with")
	fs.StringVar(&o.verifyIssuer, "verify-issuer", "", "keyless: a regular expression over the OIDC issuer of the signer")
	fs.StringVar(&o.verifySubject, "verify-subject", "", "keyless: a regular expression over the identity of the signer")
	fs.StringVar(&o.verifyTrustedRoot, "verify-trusted-root-secret-ref", "", "keyless: the Secret with trusted_root.json, the Sigstore trusted root")
	fs.DurationVar(&o.interval, "interval", time.Minute, "how often the registry is checked")
	fs.DurationVar(&o.fetchTimeout, "fetch-timeout", 0, "how long registry operations may take (the controller's default is 60s)")
	return cmd
}

// object returns the OCIRepository the flags declare, or the first flag
// that is wrong.
func (o *ociSourceFlags) object(name string, f *createFlags) (*sourcev1.OCIRepository, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if err := checkOCIURL(o.url); err != nil {
		return nil, err
	}
	spec := sourcev1.OCIRepositorySpec{URL: o.url, Insecure: o.insecure, Ignore: ignoreRules(o.ignorePaths)}
	if spec.Interval, err = positiveDuration("--interval", o.interval); err != nil {
		return nil, err
	}
	if spec.Timeout, err = optionalDuration("--fetch-timeout", o.fetchTimeout); err != nil {
		return nil, err
	}
	if spec.Reference, err = o.ref(); err != nil {
		return nil, err
	}
	if err := o.credentials(&spec); err != nil {
		return nil, err
	}
	if spec.LayerSelector, err = o.layerSelector(); err != nil {
		return nil, err
	}
	if spec.Verify, err = o.verification(); err != nil {
		return nil, err
	}
	return &sourcev1.OCIRepository{ObjectMeta: om, Spec: spec}, nil
}

// checkOCIURL checks a --url: oci://HOST/REPOSITORY, without a tag, a
// digest or credentials. The URL is not echoed, as it may hold
// credentials.
func checkOCIURL(raw string) error {
	if raw == "" {
		return errors.New("--url is required: the repository, like oci://ghcr.io/org/manifests")
	}
	rest, ok := strings.CutPrefix(raw, oci.Scheme)
	if !ok {
		return errors.New("--url must start with oci://: write it like oci://ghcr.io/org/manifests")
	}
	host, repo, _ := strings.Cut(rest, "/")
	if strings.Contains(host, "@") {
		return errors.New("--url must not carry credentials: put them in a Secret (windlass create secret oci) and pass --secret-ref")
	}
	last := repo[strings.LastIndex(repo, "/")+1:]
	if strings.ContainsAny(last, ":@") {
		return errors.New("--url names a tag or a digest: give the repository alone, and pass --tag, --tag-semver or --digest")
	}
	if _, err := name.NewRepository(rest, name.StrictValidation); err != nil || repo == "" {
		return errors.New("--url is not a repository: write oci://HOST/REPOSITORY, in lower case, like oci://ghcr.io/org/manifests")
	}
	return nil
}

// tagPattern is what a registry accepts as a tag.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// ociDigestPattern matches a sha256 digest, the form spec.ref.digest takes.
var ociDigestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// ref returns the reference the flags name: at most one of tag, semver
// range and digest; nil for the controller's default, latest.
func (o *ociSourceFlags) ref() (*sourcev1.OCIRepositoryRef, error) {
	given := 0
	for _, v := range []string{o.tag, o.semver, o.digest} {
		if v != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return nil, errors.New("pass one of --tag, --tag-semver or --digest")
	case o.semverFilter != "" && o.semver == "":
		return nil, errors.New("--semver-filter needs --tag-semver: it filters the tags the range picks from")
	case o.tag != "" && !tagPattern.MatchString(o.tag):
		return nil, fmt.Errorf("--tag %q is not a tag: letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-'", o.tag)
	case o.digest != "" && !ociDigestPattern.MatchString(o.digest):
		return nil, fmt.Errorf("--digest %q is not a digest: write sha256: and 64 lower-case hex digits", o.digest)
	case given == 0:
		return nil, nil
	}
	if o.semver != "" {
		if _, err := semver.NewConstraint(o.semver); err != nil {
			return nil, fmt.Errorf("--tag-semver %q is not a semver range (%v): write it like >=1.0.0 <2.0.0", o.semver, err)
		}
		if err := checkRegexp("--semver-filter", o.semverFilter); err != nil {
			return nil, err
		}
	}
	return &sourcev1.OCIRepositoryRef{Tag: o.tag, SemVer: o.semver, SemverFilter: o.semverFilter, Digest: o.digest}, nil
}

// credentials sets the provider and the references of spec that the flags
// give: where the credentials, the TLS settings and the proxy come from.
func (o *ociSourceFlags) credentials(spec *sourcev1.OCIRepositorySpec) error {
	if err := servedProvider(o.provider); err != nil {
		return err
	}
	spec.Provider = o.provider
	if o.serviceAccount != "" {
		if err := checkName("--service-account", o.serviceAccount); err != nil {
			return err
		}
		spec.ServiceAccountName = o.serviceAccount
	}
	var err error
	if spec.SecretRef, err = localRef("--secret-ref", o.secretRef); err != nil {
		return err
	}
	if spec.CertSecretRef, err = localRef("--cert-ref", o.certRef); err != nil {
		return err
	}
	spec.ProxySecretRef, err = localRef("--proxy-secret-ref", o.proxySecretRef)
	return err
}

// layerSelector returns the layer selector the flags give, or nil.
func (o *ociSourceFlags) layerSelector() (*sourcev1.OCILayerSelector, error) {
	switch o.layerOperation {
	case "", sourcev1.OCILayerExtract, sourcev1.OCILayerCopy:
	default:
		return nil, fmt.Errorf("--layer-operation %q is not supported: choose extract or copy", o.layerOperation)
	}
	if o.layerMediaType == "" && o.layerOperation == "" {
		return nil, nil
	}
	return &sourcev1.OCILayerSelector{MediaType: o.layerMediaType, Operation: o.layerOperation}, nil
}

// verification returns the signature verification the flags ask for, or
// nil: cosign, with keys or keyless, never both.
func (o *ociSourceFlags) verification() (*sourcev1.OCIRepositoryVerification, error) {
	keyless := o.verifyIssuer != "" || o.verifySubject != ""
	if o.verifyProvider == "" {
		if keyless || o.verifySecretRef != "" || o.verifyTrustedRoot != "" {
			return nil, errors.New("--verify-secret-ref, --verify-issuer, --verify-subject and --verify-trusted-root-secret-ref need --verify-provider cosign")
		}
		return nil, nil
	}
	switch {
	case o.verifyProvider == sourcev1.VerificationProviderNotation:
		return nil, errors.New("--verify-provider notation is not supported: use cosign")
	case o.verifyProvider != sourcev1.VerificationProviderCosign:
		return nil, fmt.Errorf("--verify-provider %q is not supported: use cosign", o.verifyProvider)
	case keyless && o.verifySecretRef != "":
		return nil, errors.New("--verify-secret-ref (public keys) and --verify-issuer/--verify-subject (keyless): choose one")
	case keyless && (o.verifyIssuer == "" || o.verifySubject == ""):
		return nil, errors.New("--verify-issuer and --verify-subject go together: pass both")
	case !keyless && o.verifySecretRef == "":
		return nil, errors.New("--verify-provider cosign needs --verify-secret-ref (public keys), or --verify-issuer and --verify-subject (keyless)")
	case !keyless && o.verifyTrustedRoot != "":
		return nil, errors.New("--verify-trusted-root-secret-ref is for keyless verification: pass --verify-issuer and --verify-subject")
	}
	v := &sourcev1.OCIRepositoryVerification{Provider: o.verifyProvider}
	var err error
	if v.SecretRef, err = localRef("--verify-secret-ref", o.verifySecretRef); err != nil {
		return nil, err
	}
	if v.TrustedRootSecretRef, err = localRef("--verify-trusted-root-secret-ref", o.verifyTrustedRoot); err != nil {
		return nil, err
	}
	if keyless {
		if err := checkRegexp("--verify-issuer", o.verifyIssuer); err != nil {
			return nil, err
		}
		if err := checkRegexp("--verify-subject", o.verifySubject); err != nil {
			return nil, err
		}
		v.MatchOIDCIdentity = []sourcev1.OIDCIdentityMatch{{Issuer: o.verifyIssuer, Subject: o.verifySubject}}
	}
	return v, nil
}

// checkRegexp checks that the value of flag, when set, is a regular
// expression.
func checkRegexp(flag, expr string) error {
	if _, err := regexp.Compile(expr); err != nil {
		return fmt.Errorf("%s %q is not a regular expression: %v", flag, expr, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return nil
}

// localRef returns a reference to the object the value of flag names, or
// nil when it is empty.
func localRef(flag, name string) (*meta.LocalObjectReference, error) {
	if name == "" {
		return nil, nil
	}
	if err := checkName(flag, name); err != nil {
		return nil, err
	}
	return &meta.LocalObjectReference{Name: name}, nil
}

// ignoreRules returns the --ignore-paths values as spec.ignore, or nil.
func ignoreRules(paths []string) *string {
	if len(paths) == 0 {
		return nil
	}
	ignore := strings.Join(paths, "\n")
	return &ignore
}

// optionalDuration returns d as an API duration, or nil when it is zero
// (the controller's default).
func optionalDuration(flag string, d time.Duration) (*metav1.Duration, error) {
	if d == 0 {
		return nil, nil
	}
	v, err := positiveDuration(flag, d)
	return &v, err
}

// ociSecretFlags are the flags of `create secret oci`.
type ociSecretFlags struct {
	url                string
	username, password string
	// passwordStdin reads the password from standard input.
	passwordStdin bool
}

func newCreateSecretOCICommand(f *createFlags) *cobra.Command {
	s := &ociSecretFlags{}
	cmd := &cobra.Command{
		Use:   "oci NAME",
		Short: "Create or update the Secret of a container registry's credentials",
		Long: `Create or update a kubernetes.io/dockerconfigjson Secret with the credentials of
a container registry, which an OCIRepository names in spec.secretRef: its
.dockerconfigjson is {"auths": {"HOST": {"username", "password", "auth"}}}.

The Secret is printed only with --export, its data in base64 as kubectl
prints it.`,
		Example: `  windlass create secret oci ghcr-auth --url ghcr.io --username bot --password-stdin < token.txt
  windlass create secret oci registry-auth --url registry.example.com:5000 -u ci -p "$TOKEN" --export > registry-auth.yaml`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if s.passwordStdin {
				if s.password != "" {
					return errors.New("--password and --password-stdin: choose one")
				}
				var err error
				if s.password, err = readStdinLine(cmd.InOrStdin(), "--password-stdin", "password"); err != nil {
					return err
				}
			}
			obj, err := s.object(args[0], f)
			if err != nil {
				return err
			}
			return f.apply(cmd, obj, false)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&s.url, "url", "", "the registry's host[:port], like ghcr.io (oci:// and https:// URLs are cut to their host)")
	fs.StringVarP(&s.username, "username", "u", "", "the user name")
	fs.StringVarP(&s.password, "password", "p", "", "the password or token")
	fs.BoolVar(&s.passwordStdin, "password-stdin", false, "read the password from standard input, not from the command line")
	return cmd
}

// dockerConfigJSON is the content of a .dockerconfigjson.
type dockerConfigJSON struct {
	Auths map[string]dockerConfigAuth `json:"auths"`
}

// dockerConfigAuth is the entry of one registry, with the credentials
// both apart and as auth, base64 of USER:PASSWORD, as docker login writes
// them.
type dockerConfigAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// object returns the Secret the flags declare, or the first flag that is
// wrong. No error holds the password.
func (s *ociSecretFlags) object(name string, f *createFlags) (*corev1.Secret, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	host, err := registryHost(s.url)
	if err != nil {
		return nil, err
	}
	switch {
	case s.username == "":
		return nil, errors.New("--username is required: the user name of the registry")
	case strings.Contains(s.username, ":"):
		return nil, errors.New("--username must not contain ':': the registry reads USER:PASSWORD")
	case s.password == "":
		return nil, errors.New("--password or --password-stdin is required: the password or token of the registry")
	}
	auth := base64.StdEncoding.EncodeToString([]byte(s.username + ":" + s.password))
	config, err := json.Marshal(dockerConfigJSON{Auths: map[string]dockerConfigAuth{
		host: {Username: s.username, Password: s.password, Auth: auth}}})
	if err != nil {
		return nil, fmt.Errorf("writing the .dockerconfigjson: %w", err)
	}
	return &corev1.Secret{ObjectMeta: om, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: config}}, nil
}

// registryHost returns the host[:port] of the registry a --url names: a
// host, or an oci, https or http URL cut to its host. The URL is not
// echoed, as it may hold credentials.
func registryHost(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("--url is required: the registry's host, like ghcr.io or registry.example.com:5000")
	}
	s := raw
	if scheme, rest, found := strings.Cut(raw, "://"); found {
		if scheme != "oci" && scheme != "https" && scheme != "http" {
			return "", errors.New("--url must be a registry's host, or an oci:// or https:// URL: write it like ghcr.io")
		}
		s = rest
	}
	host, _, _ := strings.Cut(s, "/")
	if strings.Contains(host, "@") {
		return "", errors.New("--url must not carry credentials: pass --username and --password-stdin")
	}
	if _, err := name.NewRegistry(host, name.StrictValidation); err != nil || host == "" {
		return "", errors.New("--url is not a registry host: write it like ghcr.io or registry.example.com:5000")
	}
	return host, nil
}
