package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/sourceignore"
)

// registryFlags are the flags of every artifact command: how to reach the
// registry.
type registryFlags struct {
	creds    string
	insecure bool
	timeout  time.Duration
}

// bind adds the flags to cmd.
func (f *registryFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.creds, "creds", "", "registry credentials as USER:PASSWORD (default: those of the docker config, ~/.docker/config.json)")
	fs.BoolVar(&f.insecure, "insecure-registry", false, "talk to the registry over plain HTTP")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long the command may take")
}

// options returns the registry options of the flags.
func (f *registryFlags) options() (oci.Options, error) {
	o := oci.Options{Insecure: f.insecure, UserAgent: "windlass/" + Version}
	if f.timeout <= 0 {
		return o, errors.New("--timeout must be positive")
	}
	if f.creds != "" {
		if err := o.ParseCredentials(f.creds); err != nil {
			return o, err
		}
	}
	return o, nil
}

// context returns the context of a command, bounded by --timeout.
func (f *registryFlags) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), f.timeout)
}

// artifactNoun returns the noun command of an artifact verb.
func artifactNoun(verb, short string, leaf *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: verb, Short: short}
	cmd.AddCommand(leaf)
	return cmd
}

// pushFlags are the flags of `push artifact`.
type pushFlags struct {
	registryFlags
	path, source, revision string
	annotations            []string
	ignorePaths            []string
	reproducible           bool
	output                 string
}

func newPushCommand() *cobra.Command {
	f := &pushFlags{}
	leaf := &cobra.Command{
		Use:     "artifact oci://HOST/REPOSITORY:TAG --path DIR --source URL --revision REVISION",
		Aliases: []string{"artifacts"},
		Short:   "Push a folder to a container registry as an OCI artifact",
		Long: `Pack the folder --path as a tar.gz (sorted entries, fixed modification times,
no owners) and push it to a container registry as an OCI artifact that an
OCIRepository can fetch, with the media types of the GitOps Toolkit and the
annotations org.opencontainers.image.source (--source),
org.opencontainers.image.revision (--revision) and
org.opencontainers.image.created (now, or 1970-01-01 with --reproducible,
so that the same folder always gives the same digest). Prints the URL of
the artifact with its digest.

The paths of .sourceignore files and --ignore-paths (gitignore patterns,
which replace the default of leaving out .git and other VCS files) are
left out. Credentials come from the docker config (docker login), or from
--creds.`,
		Example: `  windlass push artifact oci://ghcr.io/org/config/app:$(git rev-parse --short HEAD) \
    --path ./deploy --source "$(git config --get remote.origin.url)" \
    --revision "$(git branch --show-current)@sha1:$(git rev-parse HEAD)"
  windlass push artifact oci://registry.local:5000/app:v1 --path ./deploy --source . --revision v1 \
    --reproducible --output json`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.bind(leaf)
	fs := leaf.Flags()
	fs.StringVar(&f.path, "path", "", "the folder to push")
	fs.StringVar(&f.source, "source", "", "the URL of the source the folder comes from, e.g. its Git repository")
	fs.StringVar(&f.revision, "revision", "", "the revision of the source, e.g. main@sha1:<commit>")
	fs.StringArrayVarP(&f.annotations, "annotations", "a", nil, "an annotation KEY=VALUE to add to the manifest (repeatable)")
	fs.StringSliceVar(&f.ignorePaths, "ignore-paths", nil, "paths to leave out, in .gitignore format (comma-separated or repeated)")
	fs.BoolVar(&f.reproducible, "reproducible", false, "set the created annotation to 1970-01-01T00:00:00Z, so that the same folder gives the same digest")
	fs.StringVarP(&f.output, "output", "o", "", "print the result as json or yaml instead of text")
	return artifactNoun("push", "Push OCI artifacts to a container registry", leaf)
}

// pushResult is what push prints with --output.
type pushResult struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
	URL        string `json:"url"`
}

// run pushes the artifact url.
func (f *pushFlags) run(cmd *cobra.Command, url string) error {
	req, err := f.request()
	if err != nil {
		return err
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	ref, err := oci.ParseTag(url, o)
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	pushed, err := oci.Push(ctx, ref, req, o)
	if err != nil {
		return err
	}
	res := pushResult{Repository: ref.Context().Name(), Tag: ref.TagStr(), Digest: pushed.Digest.String(), URL: pushed.DigestURL()}
	if f.output != "" {
		return printStructured(cmd.OutOrStdout(), f.output, res)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "✔ pushed %s\n", res.URL)
	return nil
}

// request checks the flags and returns what to push.
func (f *pushFlags) request() (oci.PushRequest, error) {
	switch {
	case f.path == "":
		return oci.PushRequest{}, errors.New("--path is required: the folder to push")
	case f.source == "":
		return oci.PushRequest{}, errors.New("--source is required: the URL of the Git repository the folder comes from")
	case f.revision == "":
		return oci.PushRequest{}, errors.New("--revision is required: e.g. main@sha1:<commit>")
	case f.output != "" && f.output != "json" && f.output != "yaml":
		return oci.PushRequest{}, fmt.Errorf("--output %q is not a format: use json or yaml", f.output)
	}
	req := oci.PushRequest{Dir: f.path, Source: f.source, Revision: f.revision, Annotations: map[string]string{}}
	for _, a := range f.annotations {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return oci.PushRequest{}, fmt.Errorf("--annotations %q is not KEY=VALUE", a)
		}
		req.Annotations[k] = v
	}
	if f.reproducible {
		req.Created = oci.ReproducibleCreated
	}
	filter, err := folderFilter(f.path, f.ignorePaths, "push")
	if err != nil {
		return oci.PushRequest{}, err
	}
	req.Filter = filter
	return req, nil
}

// folderFilter checks that --path is a folder and returns the filter of
// the paths push leaves out of it: those of its .sourceignore files and of
// ignorePaths (which replace the default rules). purpose says what the
// folder is for, in errors ("push").
func folderFilter(path string, ignorePaths []string, purpose string) (archive.Filter, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--path %s cannot be read: %w", path, errors.Unwrap(err))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("--path %s is not a folder: give the folder to %s", path, purpose)
	}
	filter, err := sourceignore.NewFilter(path, ignoreRules(ignorePaths))
	if err != nil {
		return nil, fmt.Errorf("reading the ignore rules of %s: %w", path, err)
	}
	return filter, nil
}

// parseMaxSize parses the --max-size flag, a positive quantity such as
// 100Mi.
func parseMaxSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Value() <= 0 {
		return 0, fmt.Errorf("--max-size %q is not a size: write e.g. 100Mi", s)
	}
	return q.Value(), nil
}

// pullFlags are the flags of `pull artifact`.
type pullFlags struct {
	registryFlags
	output  string
	maxSize string
}

func newPullCommand() *cobra.Command {
	f := &pullFlags{}
	leaf := &cobra.Command{
		Use:     "artifact oci://HOST/REPOSITORY:TAG --output DIR",
		Aliases: []string{"artifacts"},
		Short:   "Pull an OCI artifact and extract it into a folder",
		Long: `Download the content layer of an OCI artifact (oci://HOST/REPOSITORY:TAG or
@sha256:DIGEST) and extract it into --output, a new or empty folder.

The layer is untrusted: links, devices, absolute paths and paths that climb
out with ".." are refused, and so is a layer larger than --max-size
uncompressed. A refused layer leaves nothing behind.`,
		Example: `  windlass pull artifact oci://ghcr.io/org/config/app:v1 --output ./app
  windlass pull artifact oci://ghcr.io/org/config/app@sha256:3f0a... -o ./app`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.bind(leaf)
	leaf.Flags().StringVarP(&f.output, "output", "o", "", "the new or empty folder to extract the artifact into")
	leaf.Flags().StringVar(&f.maxSize, "max-size", "100Mi", "the largest uncompressed size accepted, e.g. 100Mi or 1Gi")
	return artifactNoun("pull", "Pull OCI artifacts from a container registry", leaf)
}

// run pulls the artifact url.
func (f *pullFlags) run(cmd *cobra.Command, url string) error {
	if f.output == "" {
		return errors.New("--output is required: the folder to extract the artifact into")
	}
	maxSize, err := parseMaxSize(f.maxSize)
	if err != nil {
		return err
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	ref, err := oci.ParseReference(url, o)
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	pulled, err := oci.Pull(ctx, ref, f.output, maxSize, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "✔ pulled %s into %s\n", pulled.DigestURL(), f.output)
	if rev := pulled.Annotations[oci.AnnotationRevision]; rev != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "  revision %s from %s\n", rev, pulled.Annotations[oci.AnnotationSource])
	}
	return nil
}

// tagFlags are the flags of `tag artifact`.
type tagFlags struct {
	registryFlags
	tags []string
}

func newTagCommand() *cobra.Command {
	f := &tagFlags{}
	leaf := &cobra.Command{
		Use:     "artifact oci://HOST/REPOSITORY:TAG --tag NEW",
		Aliases: []string{"artifacts"},
		Short:   "Add tags to an OCI artifact",
		Long: `Point the tags --tag of the artifact's repository at the artifact, without
downloading or uploading its content.`,
		Example: `  windlass tag artifact oci://ghcr.io/org/config/app:v1.2.0 --tag latest --tag production`,
		Args:    nameArg,
		RunE:    func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.bind(leaf)
	leaf.Flags().StringArrayVar(&f.tags, "tag", nil, "the new tag (repeatable)")
	return artifactNoun("tag", "Tag OCI artifacts", leaf)
}

// run tags the artifact url.
func (f *tagFlags) run(cmd *cobra.Command, url string) error {
	if len(f.tags) == 0 {
		return errors.New("--tag is required: the new tag")
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	ref, err := oci.ParseReference(url, o)
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	for _, tag := range f.tags {
		tagged, err := oci.Tag(ctx, ref, tag, o)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "✔ tagged %s\n", tagged.DigestURL())
	}
	return nil
}

// listFlags are the flags of `list artifacts`.
type listFlags struct {
	registryFlags
	output   string
	noHeader bool
}

func newListCommand() *cobra.Command {
	f := &listFlags{}
	leaf := &cobra.Command{
		Use:     "artifacts oci://HOST/REPOSITORY",
		Aliases: []string{"artifact"},
		Short:   "List the OCI artifacts of a repository",
		Long: `List the tags of a repository, sorted, with the digest of each and the
revision, source and creation time its manifest annotations record.`,
		Example: `  windlass list artifacts oci://ghcr.io/org/config/app
  windlass list artifacts oci://ghcr.io/org/config/app -o json`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.bind(leaf)
	leaf.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table, yaml or json")
	leaf.Flags().BoolVar(&f.noHeader, "no-header", false, "leave the header line out")
	return artifactNoun("list", "List OCI artifacts", leaf)
}

// run lists the artifacts of the repository url.
func (f *listFlags) run(cmd *cobra.Command, url string) error {
	if f.output != "table" && f.output != "json" && f.output != "yaml" {
		return fmt.Errorf("--output %q is not a format: use table, yaml or json", f.output)
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	repo, err := oci.ParseRepository(url, o)
	if err != nil {
		return err
	}
	ctx, cancel := f.context(cmd)
	defer cancel()
	arts, err := oci.List(ctx, repo, o)
	if err != nil {
		return err
	}
	if f.output != "table" {
		return printStructured(cmd.OutOrStdout(), f.output, arts)
	}
	return printArtifacts(cmd.OutOrStdout(), arts, f.noHeader)
}

// printArtifacts prints arts as a table.
func printArtifacts(w io.Writer, arts []oci.Artifact, noHeader bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if !noHeader {
		fmt.Fprintln(tw, "TAG\tDIGEST\tREVISION\tSOURCE\tCREATED")
	}
	for _, a := range arts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Tag, a.Digest, orNone(a.Revision), orNone(a.Source), orNone(a.Created))
	}
	return tw.Flush()
}

// orNone returns s, or "-" when it is empty, so that table cells line up.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
