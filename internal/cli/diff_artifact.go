package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// diffArtifactFlags are the flags of `diff artifact`.
type diffArtifactFlags struct {
	registryFlags
	path        string
	ignorePaths []string
	maxSize     string
}

// addSubcommands adds cmds under parent and returns parent.
func addSubcommands(parent *cobra.Command, cmds ...*cobra.Command) *cobra.Command {
	parent.AddCommand(cmds...)
	return parent
}

func newDiffArtifactCommand() *cobra.Command {
	f := &diffArtifactFlags{}
	cmd := &cobra.Command{
		Use:     "artifact oci://HOST/REPOSITORY:TAG --path DIR",
		Aliases: []string{"artifacts"},
		Short:   "Compare an OCI artifact with a local folder, file by file",
		Long: `Pull the OCI artifact (oci://HOST/REPOSITORY:TAG or @sha256:DIGEST) and compare
its files with the folder --path as ` + "`windlass push artifact`" + ` would pack it: the
paths of .sourceignore files and of --ignore-paths (gitignore patterns, which
replace the default of leaving out .git and other VCS files) are left out,
and a symbolic link counts as the file it points to inside the folder.
Print one line per file that differs, by path:

  + path   in the folder, not in the artifact (a push would add it)
  - path   in the artifact, not in the folder (a push would remove it)
  ~ path   in both, with another content or executable bit

Exit code: 0 when they are the same, 1 when they differ, 2 when the diff
could not be made. Credentials come from the docker config (docker login),
or from --creds.`,
		Example: `  windlass diff artifact oci://ghcr.io/org/config/app:v1 --path ./deploy
  windlass diff artifact oci://registry.local:5000/app:latest --path ./deploy --ignore-paths "*.md,tests/" --insecure`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			differs, err := f.run(cmd, args[0])
			return diffOutcome(cmd.OutOrStdout(), differs, err)
		},
	}
	f.bind(cmd)
	flags := cmd.Flags()
	flags.BoolVar(&f.insecure, "insecure", false, "the same as --insecure-registry")
	flags.StringVar(&f.path, "path", "", "the folder to compare the artifact with")
	flags.StringSliceVar(&f.ignorePaths, "ignore-paths", nil, "paths of the folder to leave out, in .gitignore format (comma-separated or repeated)")
	flags.StringVar(&f.maxSize, "max-size", "100Mi", "the largest uncompressed size of the artifact, and of the folder, e.g. 100Mi")
	return cmd
}

// run pulls the artifact url and prints how the folder differs from it;
// it reports whether they differ.
func (f *diffArtifactFlags) run(cmd *cobra.Command, url string) (bool, error) {
	filter, maxSize, err := f.check()
	if err != nil {
		return false, err
	}
	o, err := f.options()
	if err != nil {
		return false, err
	}
	ref, err := oci.ParseReference(url, o)
	if err != nil {
		return false, err
	}
	tmp, err := workdir.MkdirTemp("windlass-diff-artifact-")
	if err != nil {
		return false, fmt.Errorf("creating a temporary folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := f.context(cmd)
	defer cancel()
	pulled, local := filepath.Join(tmp, "artifact"), filepath.Join(tmp, "folder")
	if _, err := oci.Pull(ctx, ref, pulled, maxSize, o); err != nil {
		return false, err
	}
	if err := packFolder(f.path, filter, local, maxSize); err != nil {
		return false, fmt.Errorf("packing --path %s as a push would: %w", f.path, err)
	}
	changes, err := compareTrees(pulled, local)
	if err != nil {
		return false, err
	}
	w := cmd.OutOrStdout()
	for _, c := range changes {
		fmt.Fprintf(w, "%c %s\n", c.op, c.path)
	}
	return len(changes) > 0, nil
}

// check checks the local flags, and returns the ignore rules of the folder
// and the size limit.
func (f *diffArtifactFlags) check() (archive.Filter, int64, error) {
	if f.path == "" {
		return nil, 0, errors.New("--path is required: the folder to compare the artifact with")
	}
	filter, err := folderFilter(f.path, f.ignorePaths, "compare the artifact with")
	if err != nil {
		return nil, 0, err
	}
	maxSize, err := parseMaxSize(f.maxSize)
	if err != nil {
		return nil, 0, err
	}
	return filter, maxSize, nil
}

// errPackStopped stops the packing of a folder whose extraction failed.
var errPackStopped = errors.New("the extraction stopped")

// packFolder packs dir as push does (archive.Build with filter) and
// extracts the archive into dest, as a pull would, so that both sides of
// the comparison go through the same rules; nothing is held in memory.
func packFolder(dir string, filter archive.Filter, dest string, maxSize int64) error {
	pr, pw := io.Pipe()
	built := make(chan error, 1)
	go func() {
		err := archive.Build(pw, dir, filter)
		pw.CloseWithError(err) // nil ends the stream
		built <- err
	}()
	err := archive.Extract(pr, dest, archive.WithMaxSize(maxSize))
	pr.CloseWithError(errPackStopped)
	if buildErr := <-built; buildErr != nil && !errors.Is(buildErr, errPackStopped) {
		return buildErr
	}
	return err
}

// treeChange is a file that differs between two trees: op is '+' (only in
// the second), '-' (only in the first) or '~' (changed).
type treeChange struct {
	op   byte
	path string
}

// compareTrees returns the regular files that differ between the trees
// before and after, sorted by their slash-separated paths.
func compareTrees(before, after string) ([]treeChange, error) {
	a, err := regularFiles(before)
	if err != nil {
		return nil, err
	}
	b, err := regularFiles(after)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(a)+len(b))
	for p := range a {
		paths = append(paths, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var changes []treeChange
	for _, p := range paths {
		modeA, inA := a[p]
		modeB, inB := b[p]
		switch {
		case !inA:
			changes = append(changes, treeChange{'+', p})
		case !inB:
			changes = append(changes, treeChange{'-', p})
		default:
			same, err := sameFile(filepath.Join(before, filepath.FromSlash(p)), filepath.Join(after, filepath.FromSlash(p)), modeA, modeB)
			if err != nil {
				return nil, err
			}
			if !same {
				changes = append(changes, treeChange{'~', p})
			}
		}
	}
	return changes, nil
}

// regularFiles returns the modes of the regular files under root, by
// slash-separated path.
func regularFiles(root string) (map[string]fs.FileMode, error) {
	files := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = info.Mode()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the files to compare: %w", err)
	}
	return files, nil
}

// compareChunk is how much of two files sameFile compares at a time.
const compareChunk = 32 << 10

// sameFile reports whether the files a and b have the same executable bit
// and content.
func sameFile(a, b string, modeA, modeB fs.FileMode) (bool, error) {
	if (modeA&0o111 != 0) != (modeB&0o111 != 0) {
		return false, nil
	}
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	bufA, bufB := make([]byte, compareChunk), make([]byte, compareChunk)
	for {
		na, errA := io.ReadFull(fa, bufA)
		nb, errB := io.ReadFull(fb, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		endA := errors.Is(errA, io.EOF) || errors.Is(errA, io.ErrUnexpectedEOF)
		endB := errors.Is(errB, io.EOF) || errors.Is(errB, io.ErrUnexpectedEOF)
		switch {
		case errA != nil && !endA:
			return false, errA
		case errB != nil && !endB:
			return false, errB
		case endA || endB:
			return endA == endB, nil
		}
	}
}
