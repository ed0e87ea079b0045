package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	hchart "helm.sh/helm/v4/pkg/chart/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/fetch"
	chartload "github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/helm/drift"
	"github.com/windlass-dev/windlass/internal/helm/postrender"
	"github.com/windlass-dev/windlass/internal/helm/release"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/helm/sandbox"
	"github.com/windlass-dev/windlass/internal/helm/values"
)

// helmReleaseBuild are the flags that say how to render a HelmRelease
// locally, shared by build and diff.
type helmReleaseBuild struct {
	path    string
	values  []string
	file    string
	timeout time.Duration
}

// bind adds the flags to fs.
func (b *helmReleaseBuild) bind(fs *pflag.FlagSet) {
	fs.StringVar(&b.path, "path", "", "a local chart folder to render in place of the HelmRelease's chart")
	fs.StringArrayVar(&b.values, "values", nil,
		"a local values file read in place of spec.valuesFrom; repeat the flag: the files merge in order, then spec.values over them")
	fs.StringVar(&b.file, "helmrelease-file", "", "a file holding the HelmRelease manifest to use in place of the one in the cluster")
	fs.DurationVar(&b.timeout, "timeout", 5*time.Minute, "how long the command may take")
}

// helmReleaseUse is the use line of the helmrelease subcommands of build
// and diff.
const helmReleaseUse = "helmrelease NAME"

// helmReleaseAliases are the aliases of the helmrelease subcommands.
var helmReleaseAliases = []string{"hr", "helmreleases"}

// buildHelmReleaseFlags are the flags of `windlass build helmrelease`.
type buildHelmReleaseFlags struct {
	kube   *kubeFlags
	render helmReleaseBuild
	dryRun bool
}

func newBuildHelmReleaseCommand(kube *kubeFlags) *cobra.Command {
	f := &buildHelmReleaseFlags{kube: kube}
	cmd := &cobra.Command{
		Use:     helmReleaseUse,
		Aliases: helmReleaseAliases,
		Short:   "Print the objects the HelmRelease NAME would install, rendered locally",
		Long: `Render the chart of the HelmRelease NAME as the controller installs it: the
same chart (its HelmChart's or OCIRepository's artifact, downloaded from the
URL its status gives, or from the chart repository when that URL is not
reachable from here; or the local chart folder --path, with the valuesFiles
of spec.chart), the same values (spec.valuesFrom read from the cluster, or
the local --values files in their place, then spec.values), release name
and namespace, post-renderers, common metadata, owner labels, and the label
and annotations Helm puts on every object. The HelmRelease comes from the
cluster, or from --helmrelease-file; with --dry-run no cluster is used at
all: the HelmRelease comes from --helmrelease-file, the chart from --path,
spec.valuesFrom from --values, and templates see Helm's default
capabilities.

The objects are printed as YAML documents separated by "---", in the order
Helm applies them, each in its namespace. Hooks and the chart's crds/ folder
are left out: they are not objects of the release. Templates are rendered
as for an install (.Release.IsInstall is true). The value of every key of a
Secret's data and stringData is printed as "***".`,
		Example: `  windlass build helmrelease podinfo -n apps
  windlass build hr podinfo -n apps --path ./charts/podinfo --values ./prod-values.yaml
  windlass build hr podinfo --dry-run --helmrelease-file ./apps/podinfo.yaml --path ./charts/podinfo`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, args[0])
		},
	}
	f.render.bind(cmd.Flags())
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false,
		"use no cluster: the HelmRelease comes from --helmrelease-file, the chart from --path and spec.valuesFrom from --values")
	return cmd
}

// run renders the HelmRelease name and prints its objects.
func (f *buildHelmReleaseFlags) run(cmd *cobra.Command, name string) error {
	if err := f.render.check(f.dryRun); err != nil {
		return err
	}
	var cl *helmCluster
	if !f.dryRun {
		var err error
		if cl, err = newHelmCluster(f.kube); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.render.timeout)
	defer cancel()
	hr, err := f.render.helmRelease(ctx, cl, f.kube.namespace, name)
	if err != nil {
		return err
	}
	objs, err := f.render.objects(ctx, cl, hr, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	for _, o := range objs {
		maskSecret(o)
	}
	return printYAML(cmd.OutOrStdout(), objs)
}

// check refuses flags out of range, and a --dry-run without what it needs.
func (b *helmReleaseBuild) check(dryRun bool) error {
	if b.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if b.path != "" {
		info, err := os.Stat(b.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("the folder %q does not exist: pass --path the local folder of a chart", b.path)
		case err != nil:
			return fmt.Errorf("reading the folder %q: %w", b.path, err)
		case !info.IsDir():
			return fmt.Errorf("%q is not a folder: pass --path the folder that holds Chart.yaml", b.path)
		}
	}
	if dryRun && (b.file == "" || b.path == "") {
		return errors.New("--dry-run reads no cluster: pass the HelmRelease with --helmrelease-file and its chart with --path")
	}
	return nil
}

// helmCluster is the cluster a HelmRelease is read from and rendered for.
type helmCluster struct {
	c      client.Client
	getter *release.Getter
}

// newHelmCluster connects to the cluster the flags name.
func newHelmCluster(k *kubeFlags) (*helmCluster, error) {
	c, err := k.client()
	if err != nil {
		return nil, err
	}
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	getter, err := release.NewGetter(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return &helmCluster{c: c, getter: getter}, nil
}

// helmReleaseKind is the group, version and kind of HelmReleases.
var helmReleaseKind = helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind)

// helmRelease returns the HelmRelease name of namespace: its spec from
// --helmrelease-file when set, else from the cluster, and its status from
// the cluster (none without a cluster, cl nil).
func (b *helmReleaseBuild) helmRelease(ctx context.Context, cl *helmCluster, namespace, name string) (*helmv2.HelmRelease, error) {
	hr := &helmv2.HelmRelease{}
	hr.Name, hr.Namespace = name, namespace
	if b.file != "" {
		if err := readObjectFile("--helmrelease-file", b.file, helmReleaseKind, namespace, name, hr); err != nil {
			return nil, err
		}
	}
	if cl == nil {
		return hr, nil
	}
	live := &helmv2.HelmRelease{}
	err := cl.c.Get(ctx, client.ObjectKeyFromObject(hr), live)
	switch {
	case apierrors.IsNotFound(err) && b.file != "":
		return hr, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("HelmRelease %s/%s not found: check its name and -n, or pass --helmrelease-file", hr.Namespace, hr.Name)
	case err != nil:
		return nil, fmt.Errorf("reading HelmRelease %s/%s: %w", hr.Namespace, hr.Name, err)
	}
	if b.file != "" {
		live.Spec = hr.Spec
	}
	return live, nil
}

// objects renders hr as the controller installs it and returns the
// objects of the release, with the metadata Helm adds and their
// namespaces. Without a cluster (cl nil) the chart must come from --path.
func (b *helmReleaseBuild) objects(ctx context.Context, cl *helmCluster, hr *helmv2.HelmRelease, errOut io.Writer) ([]*unstructured.Unstructured, error) {
	if hr.Spec.KubeConfig != nil {
		fmt.Fprintf(errOut, "note: HelmRelease %s/%s releases to the cluster of spec.kubeConfig; the objects are read from and checked against the cluster of your kubeconfig\n",
			hr.Namespace, hr.Name)
	}
	vals, err := b.composeValues(ctx, cl, hr, errOut)
	if err != nil {
		return nil, err
	}
	ch, err := b.chart(ctx, cl, hr, errOut)
	if err != nil {
		return nil, err
	}
	pr, err := postrender.New(hr)
	if err != nil {
		return nil, fmt.Errorf("the HelmRelease's post-renderers: %w", err)
	}
	var getter *release.Getter
	if cl != nil {
		getter = cl.getter
	}
	renderer := sandbox.New(sandbox.Limits{}, nil)
	runner, err := release.New(getter, hr.GetStorageNamespace(), release.WithSandbox(renderer))
	if err != nil {
		return nil, err
	}
	manifest, _, err := runner.Render(ctx, ch, vals, release.RenderOptions{
		ReleaseName: hr.GetReleaseName(), Namespace: hr.GetReleaseNamespace(), PostRenderer: pr, ClientOnly: cl == nil,
	})
	if err != nil {
		return nil, err
	}
	objs, err := release.ObjectsOf(manifest)
	if err != nil {
		return nil, fmt.Errorf("reading the rendered manifest: %w", err)
	}
	drift.SetReleaseMetadata(objs, hr.GetReleaseName(), hr.GetReleaseNamespace())
	var mapper apimeta.RESTMapper
	if cl != nil {
		mapper = cl.c.RESTMapper()
	}
	setNamespaces(objs, hr.GetReleaseNamespace(), mapper)
	return objs, nil
}

// setNamespaces puts each namespaced object of objs that names no
// namespace in namespace, as Helm applies it. Whether a kind is namespaced
// is asked of mapper (nil for none), else of the built-in Kubernetes
// schema; an unknown kind counts as namespaced.
func setNamespaces(objs []*unstructured.Unstructured, namespace string, mapper apimeta.RESTMapper) {
	for _, o := range objs {
		if o.GetNamespace() == "" && namespaced(o.GroupVersionKind(), mapper) {
			o.SetNamespace(namespace)
		}
	}
}

// namespaced reports whether objects of gvk live in namespaces.
func namespaced(gvk schema.GroupVersionKind, mapper apimeta.RESTMapper) bool {
	if mapper != nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Scope.Name() == apimeta.RESTScopeNameNamespace
		}
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	if ns, found := openapi.IsNamespaceScoped(kyaml.TypeMeta{APIVersion: apiVersion, Kind: kind}); found {
		return ns
	}
	return true
}

// composeValues returns the values of hr, as values.Compose composes them:
// spec.valuesFrom read from the cluster, or the --values files in their
// place, then spec.values. Without a cluster (cl nil) and without
// --values, optional valuesFrom entries are skipped with a note on errOut
// and the others fail.
func (b *helmReleaseBuild) composeValues(ctx context.Context, cl *helmCluster, hr *helmv2.HelmRelease, errOut io.Writer) (map[string]any, error) {
	if len(b.values) > 0 {
		return composeValuesFiles(ctx, hr, b.values)
	}
	if cl != nil {
		return values.Compose(ctx, cl.c, hr)
	}
	for i, ref := range hr.Spec.ValuesFrom {
		if !ref.Optional {
			return nil, fmt.Errorf("without a cluster (--dry-run), spec.valuesFrom[%d] (%s %s/%s) cannot be read: pass the values with --values FILE",
				i, ref.Kind, hr.Namespace, ref.Name)
		}
		fmt.Fprintf(errOut, "note: without a cluster (--dry-run), the optional values of %s %s/%s (valuesFrom) are not read\n",
			ref.Kind, hr.Namespace, ref.Name)
	}
	noRefs := hr.DeepCopy()
	noRefs.Spec.ValuesFrom = nil
	return values.Compose(ctx, nil, noRefs)
}

// composeValuesFiles composes the values of hr with the documents of files
// in place of spec.valuesFrom: each file is a valuesFrom entry, in order,
// then spec.values. Each file is first checked alone, so that an error
// names it.
func composeValuesFiles(ctx context.Context, hr *helmv2.HelmRelease, files []string) (map[string]any, error) {
	docs := valuesDocuments{}
	withFiles := hr.DeepCopy()
	withFiles.Spec.ValuesFrom = nil
	for i, path := range files {
		data, err := readValuesDocument(path)
		if err != nil {
			return nil, err
		}
		key := strconv.Itoa(i)
		docs[key] = data
		ref := helmv2.ValuesReference{Kind: "ConfigMap", Name: key, ValuesKey: localValuesKey}
		alone := &helmv2.HelmRelease{ObjectMeta: hr.ObjectMeta}
		alone.Spec.ValuesFrom = []helmv2.ValuesReference{ref}
		if _, err := values.Compose(ctx, docs, alone); err != nil {
			return nil, valuesFileError(path, err)
		}
		withFiles.Spec.ValuesFrom = append(withFiles.Spec.ValuesFrom, ref)
	}
	return values.Compose(ctx, docs, withFiles)
}

// readValuesDocument reads a --values file, up to one byte more than
// values.Compose accepts, so that a larger one fails there.
func readValuesDocument(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading --values: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, values.MaxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading --values %s: %w", path, err)
	}
	return data, nil
}

// valuesFileError names the --values file path in err, an error of
// values.Compose about it.
func valuesFileError(path string, err error) error {
	var inv *values.InvalidError
	if !errors.As(err, &inv) {
		return fmt.Errorf("--values %s: %w", path, err)
	}
	if inv.Err != nil {
		return fmt.Errorf("invalid values in --values %s: %s: %w", path, inv.Reason, inv.Err)
	}
	return fmt.Errorf("invalid values in --values %s: %s", path, inv.Reason)
}

// localValuesKey is the key of the ConfigMaps of valuesDocuments.
const localValuesKey = "values.yaml"

// valuesDocuments hands local values documents to values.Compose as the
// ConfigMaps its valuesFrom entries name: the ConfigMap called N holds the
// document N under the key localValuesKey.
type valuesDocuments map[string][]byte

// Get fills obj, a ConfigMap, with the document of key.Name.
func (d valuesDocuments) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	cm, ok := obj.(*corev1.ConfigMap)
	data, found := d[key.Name]
	if !ok || !found {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	cm.Name, cm.Namespace = key.Name, key.Namespace
	cm.BinaryData = map[string][]byte{localValuesKey: data}
	return nil
}

// List is not used by values.Compose.
func (valuesDocuments) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("local values documents cannot be listed")
}

// chart returns the chart hr installs: the folder --path, or the artifact
// of hr's chart source in the cluster.
func (b *helmReleaseBuild) chart(ctx context.Context, cl *helmCluster, hr *helmv2.HelmRelease, errOut io.Writer) (*hchart.Chart, error) {
	if b.path != "" {
		return loadChartFolder(ctx, b.path, hr)
	}
	if cl == nil {
		return nil, errors.New("without a cluster (--dry-run), pass the chart's folder with --path")
	}
	return fetchChart(ctx, cl.c, hr, errOut)
}

// loadChartFolder loads the chart in dir as a HelmChart builds it from a
// source: confined to the git repository dir is in (or to dir), with its
// file:// dependencies, and with the values files of hr's spec.chart
// replacing its values.
func loadChartFolder(ctx context.Context, dir string, hr *helmv2.HelmRelease) (*hchart.Chart, error) {
	root, path, err := buildRoot(dir)
	if err != nil {
		return nil, err
	}
	var ch *hchart.Chart
	err = chartload.Safely(func() error {
		var err error
		if ch, err = chartload.LoadDir(root, path, chartload.Limits{}); err != nil {
			return err
		}
		return chartload.ResolveDependencies(ctx, root, path, ch, chartload.Limits{}, nil)
	})
	var remote *chartload.RemoteDependencyError
	switch {
	case errors.As(err, &remote):
		return nil, fmt.Errorf("loading the chart in %s: %w: vendor it with `helm dependency build`", dir, err)
	case err != nil:
		return nil, fmt.Errorf("loading the chart in %s: %w", dir, err)
	}
	if t := hr.Spec.Chart; t != nil && len(t.Spec.ValuesFiles) > 0 {
		merged, err := chartload.MergeValuesFiles(root, path, t.Spec.ValuesFiles, t.Spec.IgnoreMissingValuesFiles)
		if err != nil {
			return nil, fmt.Errorf("merging the valuesFiles of spec.chart: %w", err)
		}
		if merged != nil {
			ch.Values = merged
		}
	}
	return ch, nil
}

// artifactSource is a source with an artifact.
type artifactSource interface {
	client.Object
	GetArtifact() *meta.Artifact
}

// chartDownloadTimeout bounds the download of a chart artifact, which may
// not be reachable from outside the cluster.
const chartDownloadTimeout = 30 * time.Second

// fetchChart downloads the chart artifact of hr's source from the URL its
// status gives; when that fails for a HelmChart of a HelmRepository, the
// chart is fetched from the repository, with a note on errOut.
func fetchChart(ctx context.Context, c client.Client, hr *helmv2.HelmRelease, errOut io.Writer) (*hchart.Chart, error) {
	ref, err := releaseChartSource(hr)
	if err != nil {
		return nil, fmt.Errorf("%w: pass a chart folder with --path", err)
	}
	kind, namespace, name := ref.kind, ref.namespace, ref.name
	var src artifactSource
	switch kind {
	case sourcev1.HelmChartKind:
		src = &sourcev1.HelmChart{}
	case sourcev1.OCIRepositoryKind:
		src = &sourcev1.OCIRepository{}
	default:
		return nil, fmt.Errorf("charts from a %s are not supported: pass the chart's folder with --path", kind)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the chart source %s %s/%s does not exist (yet): pass the chart's folder with --path", kind, namespace, name)
		}
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	a := src.GetArtifact()
	if a == nil {
		return nil, fmt.Errorf("%s %s/%s has no artifact yet: wait until it is Ready, or pass the chart's folder with --path", kind, namespace, name)
	}
	dl := &fetch.HTTP{Client: &http.Client{Timeout: chartDownloadTimeout}, MaxSize: chartload.DefaultMaxChartSize}
	data, dlErr := dl.ReadAll(ctx, *a, chartload.DefaultMaxChartSize)
	if dlErr != nil {
		hc, ok := src.(*sourcev1.HelmChart)
		if !ok {
			return nil, fmt.Errorf("downloading the chart of %s %s/%s: %w: pass the chart's folder with --path", kind, namespace, name, dlErr)
		}
		fmt.Fprintf(errOut, "note: the artifact of HelmChart %s/%s cannot be downloaded (%v): fetching the chart from its repository\n",
			namespace, name, dlErr)
		ch, err := chartFromRepository(ctx, c, hc)
		if err != nil {
			return nil, fmt.Errorf("fetching the chart of HelmChart %s/%s from its repository: %w", namespace, name, err)
		}
		return ch, nil
	}
	ch, err := loadChartArchive(data)
	if err != nil {
		return nil, fmt.Errorf("loading the chart of %s %s/%s: %w", kind, namespace, name, err)
	}
	if kind == sourcev1.OCIRepositoryKind {
		ch = chartload.WithDigestVersion(ch, a.Digest)
	}
	return ch, nil
}

// loadChartArchive loads a packaged chart.
func loadChartArchive(data []byte) (*hchart.Chart, error) {
	var ch *hchart.Chart
	err := chartload.Safely(func() error {
		var err error
		ch, err = chartload.LoadArchive(data, chartload.Limits{})
		return err
	})
	return ch, err
}

// chartFromRepository fetches the chart of hc from its HTTP HelmRepository
// (with the credentials of its Secrets): the version of hc's artifact,
// else of its spec, with hc's values files replacing the chart's values.
func chartFromRepository(ctx context.Context, c client.Client, hc *sourcev1.HelmChart) (*hchart.Chart, error) {
	ref := hc.Spec.SourceRef
	if ref.Kind != sourcev1.HelmRepositoryKind {
		return nil, fmt.Errorf("the chart is built from %s %s/%s: pass the chart's folder with --path", ref.Kind, hc.Namespace, ref.Name)
	}
	repo := &sourcev1.HelmRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: ref.Name}, repo); err != nil {
		return nil, fmt.Errorf("reading HelmRepository %s/%s: %w", hc.Namespace, ref.Name, err)
	}
	if repo.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
		return nil, fmt.Errorf("HelmRepository %s/%s is an OCI registry: pass the chart's folder with --path", repo.Namespace, repo.Name)
	}
	opts, err := repositoryClientOptions(ctx, c, repo)
	if err != nil {
		return nil, err
	}
	index, err := repository.FetchIndex(ctx, repo.Spec.URL, opts)
	if err != nil {
		return nil, err
	}
	idx, err := repository.ParseIndex(index)
	if err != nil {
		return nil, err
	}
	version := hc.Spec.Version
	if a := hc.Status.Artifact; a != nil && a.Revision != "" {
		version = a.Revision
	}
	cv, err := idx.Get(hc.Spec.Chart, version)
	if err != nil {
		return nil, err
	}
	data, err := repository.DownloadChart(ctx, repo.Spec.URL, cv, opts)
	if err != nil {
		return nil, err
	}
	ch, err := loadChartArchive(data)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s %s: %w", cv.Name, cv.Version, err)
	}
	merged, err := chartload.MergeChartValuesFiles(ch, hc.Spec.ValuesFiles, hc.Spec.IgnoreMissingValuesFiles)
	if err != nil {
		return nil, fmt.Errorf("merging the valuesFiles of HelmChart %s/%s: %w", hc.Namespace, hc.Name, err)
	}
	if merged != nil {
		ch.Values = merged
	}
	return ch, nil
}

// repositoryClientOptions returns how to reach repo: the username and
// password of its spec.secretRef, the TLS data of its spec.certSecretRef.
func repositoryClientOptions(ctx context.Context, c client.Client, repo *sourcev1.HelmRepository) (repository.ClientOptions, error) {
	opts := repository.ClientOptions{PassCredentials: repo.Spec.PassCredentials, UserAgent: "windlass-cli"}
	if t := repo.Spec.Timeout; t != nil {
		opts.Timeout = t.Duration
	}
	if ref := repo.Spec.SecretRef; ref != nil {
		data, err := repositorySecretData(ctx, c, repo.Namespace, ref.Name)
		if err != nil {
			return opts, err
		}
		opts.Username, opts.Password = string(data["username"]), string(data["password"])
	}
	if ref := repo.Spec.CertSecretRef; ref != nil {
		data, err := repositorySecretData(ctx, c, repo.Namespace, ref.Name)
		if err != nil {
			return opts, err
		}
		opts.CertData = data
	}
	return opts, nil
}

// repositorySecretData returns the data of the Secret namespace/name.
func repositorySecretData(ctx context.Context, c client.Client, namespace, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	return s.Data, nil
}
