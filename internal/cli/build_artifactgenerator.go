package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/generator"
)

// buildGeneratorFlags are the flags of `windlass build artifactgenerator`.
type buildGeneratorFlags struct {
	kube    *kubeFlags
	sources []string
	file    string
	output  string
	dryRun  bool
}

func newBuildArtifactGeneratorCommand(kube *kubeFlags) *cobra.Command {
	f := &buildGeneratorFlags{kube: kube}
	cmd := &cobra.Command{
		Use:     "artifactgenerator NAME --source ALIAS=DIR ...",
		Aliases: []string{"artifactgenerators", "ag"},
		Short:   "Print the files of each artifact the ArtifactGenerator NAME would generate from local folders",
		Long: `Generate the artifacts of the ArtifactGenerator NAME as the controller does,
from local folders in place of its sources' artifacts: one --source
ALIAS=DIR for each alias the generator uses. The same copy operations,
exclusions, strategies and pathPattern apply, within the same bounds. The
generator comes from the cluster, or from --artifactgenerator-file; with
--dry-run no cluster is used at all.

Each artifact is printed with the digest of its files (two builds of the
same files give the same digest, and the controller then keeps the
artifact's revision) and the list of its files; --output DIR also writes
each artifact's files into DIR/<artifact>/.`,
		Example: `  windlass build artifactgenerator apps -n platform --source mono=./
  windlass build ag apps --dry-run --artifactgenerator-file ./generators.yaml --source mono=. --output /tmp/artifacts`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	cmd.Flags().StringArrayVar(&f.sources, "source", nil, "ALIAS=DIR: the local folder that stands for the source of ALIAS; repeat the flag for each alias")
	cmd.Flags().StringVar(&f.file, "artifactgenerator-file", "", "a file holding the ArtifactGenerator manifest to use in place of the one in the cluster")
	cmd.Flags().StringVar(&f.output, "output", "", "a folder to write each artifact's files into, under DIR/<artifact>/ (it must not hold them yet)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "use no cluster: the ArtifactGenerator comes from --artifactgenerator-file")
	return cmd
}

// run builds the artifacts of the generator name and prints them.
func (f *buildGeneratorFlags) run(ctx context.Context, w io.Writer, name string) error {
	trees, err := f.trees()
	if err != nil {
		return err
	}
	gen, err := f.generator(ctx, name)
	if err != nil {
		return err
	}
	for _, s := range gen.Spec.Sources {
		if _, ok := trees[s.Alias]; !ok {
			return fmt.Errorf("no --source for the alias %q (%s %s): pass --source %s=DIR", s.Alias, s.Kind, s.Name, s.Alias)
		}
	}
	plan, err := generator.Plan(gen.Spec, trees)
	if err != nil {
		return err
	}
	for _, p := range plan {
		if err := f.buildOne(w, trees, p); err != nil {
			return fmt.Errorf("artifact %s: %w", p.Spec.Name, err)
		}
	}
	return nil
}

// trees returns the folders of --source by alias.
func (f *buildGeneratorFlags) trees() (map[string]string, error) {
	if len(f.sources) == 0 {
		return nil, errors.New("--source ALIAS=DIR is required, once for each alias of the generator")
	}
	trees := map[string]string{}
	for _, s := range f.sources {
		alias, dir, ok := strings.Cut(s, "=")
		if !ok || alias == "" || dir == "" {
			return nil, fmt.Errorf("--source %q is not ALIAS=DIR", s)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--source %s: %q is not a folder", alias, dir)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		trees[alias] = abs
	}
	return trees, nil
}

// generator returns the generator name: from --artifactgenerator-file,
// else from the cluster.
func (f *buildGeneratorFlags) generator(ctx context.Context, name string) (*sourceextv1beta1.ArtifactGenerator, error) {
	gen := &sourceextv1beta1.ArtifactGenerator{}
	if f.file != "" {
		gvk := sourceextv1beta1.GroupVersion.WithKind(sourceextv1beta1.ArtifactGeneratorKind)
		return gen, readObjectFile("--artifactgenerator-file", f.file, gvk, f.kube.namespace, name, gen)
	}
	if f.dryRun {
		return nil, errors.New("--dry-run needs --artifactgenerator-file: without a cluster, the generator comes from a file")
	}
	c, err := f.kube.client()
	if err != nil {
		return nil, err
	}
	err = c.Get(ctx, client.ObjectKey{Namespace: f.kube.namespace, Name: name}, gen)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("ArtifactGenerator %s/%s not found: check its name and -n, or pass --artifactgenerator-file", f.kube.namespace, name)
	}
	return gen, err
}

// buildOne builds the artifact p into a folder (under --output, or
// temporary) and prints its digest and files.
func (f *buildGeneratorFlags) buildOne(w io.Writer, trees map[string]string, p generator.Planned) error {
	dir := filepath.Join(f.output, p.Spec.Name)
	if f.output == "" {
		tmp, err := os.MkdirTemp("", "windlass-artifact-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("--output: %s exists already: choose an empty folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := (&generator.Builder{Sources: trees}).Build(generator.Rules(p.Spec), dir); err != nil {
		return err
	}
	digest, err := generator.TreeDigest(dir)
	if err != nil {
		return err
	}
	files, err := filesUnder(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "► %s: %d file(s), content sha256:%s\n", p.Spec.Name, len(files), digest)
	for _, file := range files {
		fmt.Fprintf(w, "  %s\n", file)
	}
	return nil
}

// filesUnder returns the paths of the regular files under dir, sorted.
func filesUnder(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	slices.Sort(files)
	return files, err
}
