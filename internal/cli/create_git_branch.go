package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/spf13/cobra"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// defaultBranchTimeout bounds the look at the remote's branches.
const defaultBranchTimeout = 10 * time.Second

// createGitSource is the RunE of `create source git`: a GitRepository
// without a ref and without credentials follows the remote's default
// branch when the remote has no master (the controller's default), rather
// than fail on it.
func (g *gitSourceFlags) createGitSource(f *createFlags) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		obj, err := g.object(args[0], f)
		if err != nil {
			return err
		}
		if obj.Spec.Reference == nil && !f.export && obj.Spec.SecretRef == nil {
			followDefaultBranch(cmd.Context(), obj, cmd.ErrOrStderr())
		}
		return f.apply(cmd, obj, true)
	}
}

// followDefaultBranch sets the branch of obj, a GitRepository without a
// ref, to the remote's default branch (its HEAD) when the remote, read
// anonymously over http(s), has no master branch, and says so on errOut.
// A remote it cannot read leaves obj as it is: the controller reports.
func followDefaultBranch(ctx context.Context, obj *sourcev1.GitRepository, errOut io.Writer) {
	if !strings.HasPrefix(obj.Spec.URL, "http://") && !strings.HasPrefix(obj.Spec.URL, "https://") {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, defaultBranchTimeout)
	defer cancel()
	remote := gogit.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: gogit.DefaultRemoteName, URLs: []string{obj.Spec.URL}})
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{})
	if err != nil {
		return
	}
	head := ""
	for _, ref := range refs {
		switch {
		case ref.Name() == plumbing.Master:
			return
		case ref.Name() == plumbing.HEAD && ref.Type() == plumbing.SymbolicReference && ref.Target().IsBranch():
			head = ref.Target().Short()
		}
	}
	if head == "" {
		return
	}
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: head}
	fmt.Fprintf(errOut, "note: the remote has no branch master (the default without --branch): following its default branch %s\n", head)
}
