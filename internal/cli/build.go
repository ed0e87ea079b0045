package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/plan"
	"github.com/windlass-dev/windlass/internal/sops"
)

// localBuild are the flags that say how to build a Kustomization from a
// local folder, shared by build and diff.
type localBuild struct {
	path             string
	file             string
	strictSubstitute bool
	timeout          time.Duration
}

// bind adds the flags to fs.
func (b *localBuild) bind(fs *pflag.FlagSet) {
	fs.StringVar(&b.path, "path", "", "the local folder of the Kustomization's manifests (its spec.path is not used)")
	fs.StringVar(&b.file, "kustomization-file", "", "a file holding the Kustomization manifest to use in place of the one in the cluster")
	fs.BoolVar(&b.strictSubstitute, "strict-substitute", false,
		"fail when a ${var} has no value and no default, as the controller always does (otherwise it becomes empty)")
	fs.DurationVar(&b.timeout, "timeout", 5*time.Minute, "how long the command may take")
}

// localVerb are the flags of a verb that builds a Kustomization from a
// local folder (build, diff): those of the cluster and of the build.
type localVerb struct {
	kube  kubeFlags
	local localBuild
}

// buildFlags are the flags of `windlass build`.
type buildFlags struct {
	localVerb
	dryRun bool
}

func newBuildCommand() *cobra.Command {
	f := &buildFlags{}
	leaf := &cobra.Command{
		Short: "Print the objects the Kustomization NAME would apply, built from the folder --path",
		Long: `Build the folder --path as the controller builds the Kustomization NAME: the
same kustomize build (confined to the enclosing git repository, or to the
folder when it is in none), with the overlays of the Kustomization's spec
(targetNamespace, namePrefix, patches, images, components...), its post-build
substitution (substitute, and substituteFrom ConfigMaps and Secrets read
from the cluster) and its ignore rules. The spec comes from the cluster, or
from --kustomization-file; with --dry-run no cluster is used at all: the
spec comes from --kustomization-file or is empty, and substituteFrom is
skipped.

The objects are printed as YAML documents separated by "---", in the order
of the build (kustomize's: namespaces and definitions first, then by kind
and name), with the owner labels the controller applies. The value of every
key of a Secret's data and stringData is printed as "***", unless the Secret
is SOPS-encrypted (its values are then ciphertext, printed as they are).`,
		Example: `  windlass build kustomization apps --path ./clusters/prod/apps
  windlass build ks apps --path ./apps --dry-run --kustomization-file ./clusters/prod/apps.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, args[0])
		},
	}
	leaf.Flags().BoolVar(&f.dryRun, "dry-run", false, "use no cluster: the spec comes from --kustomization-file or is empty, and substituteFrom is skipped")
	cmd := f.command("build", "Print what a Kustomization or a HelmRelease would apply, or what an ArtifactGenerator would generate, built locally", leaf)
	return addSubcommands(cmd, newBuildHelmReleaseCommand(&f.kube), newBuildArtifactGeneratorCommand(&f.kube))
}

// command returns the command verb, whose one subcommand leaf is
// `verb kustomization NAME --path DIR` (aliases ks, kustomizations): the
// cluster flags go on verb, the flags of the local build on leaf.
func (f *localVerb) command(verb, short string, leaf *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: verb, Short: short}
	f.kube.bind(cmd)
	leaf.Use = "kustomization NAME --path DIR"
	leaf.Aliases = []string{"ks", "kustomizations"}
	leaf.Args = nameArg
	f.local.bind(leaf.Flags())
	cmd.AddCommand(leaf)
	return cmd
}

// run builds the Kustomization name and prints its objects.
func (f *buildFlags) run(cmd *cobra.Command, name string) error {
	if err := f.local.check(); err != nil {
		return err
	}
	var c client.Client
	if !f.dryRun {
		var err error
		if c, err = f.kube.client(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.local.timeout)
	defer cancel()
	ks, err := f.local.kustomization(ctx, c, f.kube.namespace, name)
	if err != nil {
		return err
	}
	if f.dryRun && f.local.file == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "note: --dry-run without --kustomization-file builds with an empty spec: no overlay applies,"+
			" and no ${variable} is substituted")
	}
	objs, err := f.local.objects(ctx, c, ks, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	owner := kustomization.Owner(ks).Labels()
	for _, o := range objs {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range owner {
			labels[k] = v
		}
		o.SetLabels(labels)
		maskSecret(o)
	}
	return printYAML(cmd.OutOrStdout(), objs)
}

// check refuses flags out of range and a --path that is not a folder.
func (b *localBuild) check() error {
	if b.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if b.path == "" {
		return errors.New("--path is required: pass the local folder of the Kustomization's manifests")
	}
	info, err := os.Stat(b.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("the folder %q does not exist: pass --path the local folder of the Kustomization's manifests", b.path)
	case err != nil:
		return fmt.Errorf("reading the folder %q: %w", b.path, err)
	case !info.IsDir():
		return fmt.Errorf("%q is not a folder: pass --path the folder that holds the manifests, not a file", b.path)
	}
	return nil
}

// kustomization returns the Kustomization name of namespace: its spec from
// --kustomization-file when set, else from the cluster (empty without a
// cluster, c nil), and its status from the cluster.
func (b *localBuild) kustomization(ctx context.Context, c client.Client, namespace, name string) (*kustomizev1.Kustomization, error) {
	ks := &kustomizev1.Kustomization{}
	ks.Name, ks.Namespace = name, namespace
	if b.file != "" {
		var err error
		if ks, err = readKustomizationFile(b.file, namespace, name); err != nil {
			return nil, err
		}
	}
	if c == nil {
		return ks, nil
	}
	live := &kustomizev1.Kustomization{}
	err := c.Get(ctx, client.ObjectKeyFromObject(ks), live)
	switch {
	case apierrors.IsNotFound(err) && b.file != "":
		return ks, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("Kustomization %s/%s not found: check its name and -n, or pass --kustomization-file", ks.Namespace, ks.Name)
	case err != nil:
		return nil, fmt.Errorf("reading Kustomization %s/%s: %w", ks.Namespace, ks.Name, err)
	}
	if b.file != "" {
		live.Spec = ks.Spec
	}
	return live, nil
}

// kustomizationGroupKind is the group and kind of Kustomizations.
var kustomizationGroupKind = schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: kustomizev1.KustomizationKind}

// readKustomizationFile returns the Kustomization called name among the
// YAML documents of path (namespace when it names none).
func readKustomizationFile(path, namespace, name string) (*kustomizev1.Kustomization, error) {
	ks := &kustomizev1.Kustomization{}
	gvk := kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind)
	if err := readObjectFile("--kustomization-file", path, gvk, namespace, name, ks); err != nil {
		return nil, err
	}
	return ks, nil
}

// readObjectFile decodes into obj the object of gvk's group and kind called
// name among the YAML documents of path, the file of flag; its namespace
// is namespace when it names none.
func readObjectFile(flag, path string, gvk schema.GroupVersionKind, namespace, name string, obj client.Object) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", flag, err)
	}
	var found []string
	for _, doc := range splitYAML(data) {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return fmt.Errorf("%s %s is not valid YAML: %w", flag, path, err)
		}
		if u.GroupVersionKind().GroupKind() != gvk.GroupKind() {
			continue
		}
		if u.GetName() != name {
			found = append(found, u.GetName())
			continue
		}
		if err := yaml.Unmarshal(doc, obj); err != nil {
			return fmt.Errorf("%s %s: %s %s: %w", flag, path, gvk.Kind, name, err)
		}
		if obj.GetNamespace() == "" {
			obj.SetNamespace(namespace)
		}
		return nil
	}
	if len(found) > 0 {
		return fmt.Errorf("%s %s holds no %s %q (it holds %s): check the name", flag, path, gvk.Kind, name, strings.Join(found, ", "))
	}
	return fmt.Errorf("%s %s holds no %s: pass a file with a %s manifest", flag, path, gvk.Kind, gvk.GroupVersion())
}

// splitYAML returns the documents of a YAML stream.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	for _, doc := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
	return docs
}

// objects builds the folder as the controller builds ks: generate a
// kustomization when the folder has none, build with the spec's overlays,
// substitute, decode, apply the ignore rules. SOPS-encrypted Secrets stay
// encrypted. Without a cluster (c nil) substituteFrom is skipped, with a
// note on errOut.
func (b *localBuild) objects(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, errOut io.Writer) ([]*unstructured.Unstructured, error) {
	root, path, err := buildRoot(b.path)
	if err != nil {
		return nil, err
	}
	files, err := build.Generate(root, path)
	if err != nil {
		return nil, fmt.Errorf("generating a kustomization for %s: %w", b.path, err)
	}
	opts := kustomization.BuildOptions(&ks.Spec)
	opts.Files = files
	docs, err := build.BuildDocuments(root, path, opts)
	if err != nil {
		return nil, err
	}
	vars, err := substituteVars(ctx, c, ks, errOut)
	if err != nil {
		return nil, err
	}
	sub, err := kustomization.Substitution(&ks.Spec, vars, b.strictSubstitute)
	if err != nil {
		return nil, err
	}
	objs, err := docs.Objects(sub)
	if err != nil {
		return nil, build.Locate(err, root, path, opts)
	}
	rules, err := kustomization.IgnoreRules(ks.Spec.Ignore)
	if err != nil {
		return nil, fmt.Errorf("the Kustomization's %w", err)
	}
	rules.Apply(objs)
	return objs, nil
}

// buildRoot returns the root the build of dir is confined to, as an
// artifact confines the controller's: the git repository dir is in, or dir
// itself; and the path of dir below it.
func buildRoot(dir string) (root, path string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", "", fmt.Errorf("reading the folder %q: %w", dir, err)
	}
	root = abs
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	path, err = filepath.Rel(root, abs)
	return root, path, err
}

// substituteVars returns the variables of ks's postBuild, as the
// controller reads them (see kustomization.SubstituteVars). Without a
// cluster (c nil) substituteFrom is skipped, with a note on errOut.
func substituteVars(ctx context.Context, c client.Client, ks *kustomizev1.Kustomization, errOut io.Writer) (map[string]string, error) {
	if pb := ks.Spec.PostBuild; pb != nil && c == nil {
		for _, ref := range pb.SubstituteFrom {
			fmt.Fprintf(errOut, "note: without a cluster (--dry-run), the variables of %s %s/%s (substituteFrom) are not read\n",
				ref.Kind, ks.Namespace, ref.Name)
		}
	}
	return kustomization.SubstituteVars(ctx, c, ks)
}

// maskSecret replaces, in place, every value of a Secret's data and
// stringData with secretMask, unless the Secret is SOPS-encrypted.
func maskSecret(obj *unstructured.Unstructured) {
	if !plan.IsSecret(obj) || sops.IsEncryptedSecret(obj) {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		values, ok := obj.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k := range values {
			values[k] = plan.SecretMask
		}
	}
}

// printYAML writes objs as YAML documents separated by "---".
func printYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	for i, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("printing %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
