// Package bootstrap makes Windlass manage itself from Git: it writes the
// install manifests and a sync (a GitRepository of the repository and a
// Kustomization of the cluster's folder) into a Git repository, commits
// and pushes them when they changed, so that the controllers then keep the
// cluster, themselves included, equal to that folder.
package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	gogit "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// Names of what bootstrap writes, as the reference implementation names
// them, so that a repository bootstrapped by either looks the same.
const (
	// SyncName names the GitRepository, the Kustomization and the Secret
	// of the credentials.
	SyncName = "flux-system"
	// ComponentsFile holds the install manifests.
	ComponentsFile = "gotk-components.yaml"
	// SyncFile holds the GitRepository and the Kustomization.
	SyncFile = "gotk-sync.yaml"
)

// Sync says which repository, branch and folder a cluster follows.
type Sync struct {
	// URL and Branch of the repository.
	URL, Branch string
	// Path is the cluster's folder in the repository, e.g. clusters/prod.
	Path string
	// Namespace holds Windlass and the sync objects.
	Namespace string
	// Interval of the GitRepository and the Kustomization.
	Interval time.Duration
	// SecretRef names the Secret with the credentials; empty for none.
	SecretRef string
}

// Objects returns the GitRepository and the Kustomization of the sync.
func (s Sync) Objects() []client.Object {
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: SyncName, Namespace: s.Namespace},
		Spec: sourcev1.GitRepositorySpec{URL: s.URL, Interval: metav1.Duration{Duration: s.Interval},
			Reference: &sourcev1.GitRepositoryRef{Branch: s.Branch}},
	}
	if s.SecretRef != "" {
		repo.Spec.SecretRef = &meta.LocalObjectReference{Name: s.SecretRef}
	}
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: SyncName, Namespace: s.Namespace},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: s.Interval}, Path: "./" + path.Clean(s.Path), Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: SyncName}},
	}
	return []client.Object{repo, ks}
}

// Files returns the files bootstrap writes under the cluster's folder:
// PATH/flux-system/{gotk-components.yaml, gotk-sync.yaml,
// kustomization.yaml}.
func Files(s Sync, components []byte) (map[string][]byte, error) {
	var sync bytes.Buffer
	for _, obj := range s.Objects() {
		data, err := manifest(obj)
		if err != nil {
			return nil, err
		}
		sync.WriteString("---\n")
		sync.Write(data)
	}
	dir := path.Join(path.Clean(s.Path), SyncName)
	return map[string][]byte{
		path.Join(dir, ComponentsFile): components,
		path.Join(dir, SyncFile):       sync.Bytes(),
		path.Join(dir, "kustomization.yaml"): []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" +
			"  - " + ComponentsFile + "\n  - " + SyncFile + "\n"),
	}, nil
}

// manifest returns obj as YAML for Git: without its status and the empty
// creation timestamp, which the cluster writes.
func manifest(obj client.Object) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	return yaml.Marshal(u)
}

// Commit says who commits.
type Commit struct {
	AuthorName, AuthorEmail string
	Message                 string
}

// Push clones branch of url (or starts it when the repository or the
// branch is empty), writes files, and commits and pushes them when they
// changed anything. It returns the branch's head commit, and whether it
// made it.
func Push(ctx context.Context, url, branch string, auth transport.AuthMethod, files map[string][]byte, c Commit) (string, bool, error) {
	repo, err := checkout(ctx, url, branch, auth)
	if err != nil {
		return "", false, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", false, err
	}
	for name, data := range files {
		if err := util.WriteFile(wt.Filesystem, name, data, 0o644); err != nil {
			return "", false, err
		}
		if _, err := wt.Add(name); err != nil {
			return "", false, err
		}
	}
	status, err := wt.Status()
	if err != nil {
		return "", false, err
	}
	if status.IsClean() {
		head, err := repo.Head()
		if err != nil {
			return "", false, err
		}
		return head.Hash().String(), false, nil
	}
	sig := &object.Signature{Name: c.AuthorName, Email: c.AuthorEmail, When: time.Now()}
	sha, err := wt.Commit(c.Message, &gogit.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return "", false, fmt.Errorf("committing: %w", err)
	}
	ref := plumbing.NewBranchReferenceName(branch)
	err = repo.PushContext(ctx, &gogit.PushOptions{RemoteName: gogit.DefaultRemoteName, Auth: auth,
		RefSpecs: []gitconfig.RefSpec{gitconfig.RefSpec(ref + ":" + ref)}})
	if err != nil {
		return "", false, fmt.Errorf("pushing to %s: %w", url, err)
	}
	return sha.String(), true, nil
}

// checkout clones branch into memory; an empty repository, or one without
// the branch, gives a worktree on a new branch of that name.
func checkout(ctx context.Context, url, branch string, auth transport.AuthMethod) (*gogit.Repository, error) {
	ref := plumbing.NewBranchReferenceName(branch)
	repo, err := gogit.CloneContext(ctx, memory.NewStorage(), memfs.New(), &gogit.CloneOptions{
		URL: url, Auth: auth, ReferenceName: ref, SingleBranch: true, Depth: 1})
	if err == nil {
		return repo, nil
	}
	if !errors.Is(err, transport.ErrEmptyRemoteRepository) && !isMissingBranch(err) {
		return nil, fmt.Errorf("cloning %s: %w", url, err)
	}
	repo, err = gogit.InitWithOptions(memory.NewStorage(), memfs.New(), gogit.InitOptions{DefaultBranch: ref})
	if err != nil {
		return nil, err
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: gogit.DefaultRemoteName, URLs: []string{url}}); err != nil {
		return nil, err
	}
	return repo, nil
}

// isMissingBranch says whether a clone failed because the branch does not
// exist.
func isMissingBranch(err error) bool {
	var noRef gogit.NoMatchingRefSpecError
	return errors.As(err, &noRef) || errors.Is(err, plumbing.ErrReferenceNotFound)
}
