package image

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// pushGroup is one commit to make: the policies whose updates go to one
// branch.
type pushGroup struct {
	branch string
	refs   map[imageupdate.PolicyKey]imageupdate.ImageRef
}

// pushed is the outcome of a group: the commit pushed and what it
// changed, or an empty commit when nothing changed.
type pushed struct {
	branch string
	commit string
	result *imageupdate.Result
}

// checkoutDir makes a temporary folder for a checkout: in WorkDir, else in
// the process's work folder, where a sweep finds it if the process dies.
func (r *ImageUpdateAutomationReconciler) checkoutDir() (string, error) {
	if r.WorkDir != "" {
		return os.MkdirTemp(r.WorkDir, "image-update-")
	}
	return workdir.MkdirTemp("image-update-")
}

// update checks out the repository, applies the policies and pushes what
// changed, one commit per branch. It does not clone when neither the
// policies nor the branch moved since the last run: one ls-remote then.
func (r *ImageUpdateAutomationReconciler) update(ctx context.Context, obj *imagev1.ImageUpdateAutomation, scope *automationScope) (outcome.Result, error) {
	groups, err := pushGroups(obj, scope)
	if err != nil {
		return outcome.ResultEmpty, err
	}
	if r.upToDate(ctx, obj, scope, groups) {
		return outcome.ResultSuccess, nil
	}
	dir, err := r.checkoutDir()
	if err != nil {
		return outcome.ResultEmpty, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	client, err := git.NewClient(dir, scope.auth, scope.proxy)
	if err != nil {
		return outcome.ResultEmpty, gitError(err)
	}
	defer client.Close()
	ws, base, err := client.Open(ctx, scope.url, scope.checkout)
	if err != nil {
		return outcome.ResultEmpty, gitError(err)
	}
	var done []pushed
	for i, g := range groups {
		// The work tree is at the commit checked out only for the first
		// group: every other group starts from its branch's tip.
		if i > 0 || g.branch != checkoutBranch(scope) {
			if err := ws.Refresh(ctx, g.branch); err != nil {
				return outcome.ResultEmpty, gitError(err)
			}
		}
		p, err := r.pushGroup(ctx, obj, scope, ws, g)
		if err != nil {
			return outcome.ResultEmpty, err
		}
		done = append(done, p)
	}
	r.recordPushes(ctx, obj, scope, done, base)
	return outcome.ResultSuccess, nil
}

// pushGroups sorts the policies into the branches they are pushed to: one
// group for spec.git.push.branch (or the branch checked out), or, with a
// branch template, one per branch it names (a template that names
// .Policy gives each policy a branch of its own).
func pushGroups(obj *imagev1.ImageUpdateAutomation, scope *automationScope) ([]pushGroup, error) {
	if !hasBranchTemplate(obj) {
		return []pushGroup{{branch: pushBranch(obj, scope), refs: scope.refs}}, nil
	}
	byBranch := map[string]map[imageupdate.PolicyKey]imageupdate.ImageRef{}
	for key, ref := range scope.refs {
		branch, err := renderBranch(obj, key, ref)
		if err != nil {
			return nil, err
		}
		if byBranch[branch] == nil {
			byBranch[branch] = map[imageupdate.PolicyKey]imageupdate.ImageRef{}
		}
		byBranch[branch][key] = ref
	}
	groups := make([]pushGroup, 0, len(byBranch))
	for _, branch := range slices.Sorted(maps.Keys(byBranch)) {
		groups = append(groups, pushGroup{branch: branch, refs: byBranch[branch]})
	}
	return groups, nil
}

// pushGroup commits the updates of one group on its branch, which the work
// tree is at (its remote tip when it exists, else the commit checked out),
// and pushes them. A push that loses a race to another commit is
// applied again on the new tip, at most MaxPushAttempts times; nothing is
// ever force-pushed. The automations of this process that push to the
// same branch take turns (clones still run side by side): they would
// otherwise lose races to each other, each costing a fetch and a push.
// Each push is counted in windlass_image_update_pushes_total.
func (r *ImageUpdateAutomationReconciler) pushGroup(ctx context.Context, obj *imagev1.ImageUpdateAutomation, scope *automationScope,
	ws *git.Workspace, g pushGroup) (pushed, error) {
	unlock, err := r.branchTurns.lock(ctx, scope.url+"#"+g.branch)
	if err != nil {
		return pushed{}, err
	}
	defer unlock()
	for attempt := 1; ; attempt++ {
		result, err := imageupdate.ApplySetters(ws.Dir(), obj.GetUpdatePath(), g.refs)
		if err != nil {
			return pushed{}, outcome.Fail(imagev1.ReasonUpdateFailed, fmt.Errorf("updating the files: %w", err))
		}
		if result.Empty() {
			return pushed{branch: g.branch, commit: ws.Head()}, nil
		}
		commit, err := r.commit(obj, scope, ws, result)
		if errors.Is(err, git.ErrNothingToCommit) {
			return pushed{branch: g.branch, commit: ws.Head()}, nil
		}
		if err != nil {
			return pushed{}, err
		}
		err = ws.Push(ctx, pushOptions(obj, g.branch))
		metrics.RecordImagePush(err) // every attempt, a lost race too
		var rejected *git.PushRejectedError
		if errors.As(err, &rejected) && rejected.NonFastForward && attempt < r.maxPushAttempts() {
			ctrl.LoggerFrom(ctx).Info("Push lost a race, applying the update again on the new tip", "branch", g.branch, "attempt", attempt)
			if err := ws.Refresh(ctx, g.branch); err != nil {
				return pushed{}, gitError(err)
			}
			continue
		}
		if errors.As(err, &rejected) {
			return pushed{}, outcome.Fail(imagev1.ReasonPushRejected, fmt.Errorf("push to branch '%s' refused: %w", g.branch, err))
		}
		if err != nil {
			return pushed{}, gitError(err)
		}
		return pushed{branch: g.branch, commit: commit, result: result}, nil
	}
}

func (r *ImageUpdateAutomationReconciler) maxPushAttempts() int {
	if r.MaxPushAttempts <= 0 {
		return DefaultMaxPushAttempts
	}
	return r.MaxPushAttempts
}

// commit commits the work tree with the automation's author, message and
// signing key, and adds the note that records the update.
func (r *ImageUpdateAutomationReconciler) commit(obj *imagev1.ImageUpdateAutomation, scope *automationScope,
	ws *git.Workspace, result *imageupdate.Result) (string, error) {
	msg, err := commitMessage(obj, result)
	if err != nil {
		return "", err
	}
	author := obj.Spec.GitSpec.Commit.Author
	hash, err := ws.Commit(git.CommitOptions{
		Message: msg,
		Author:  git.Signature{Name: orDefault(author.Name, DefaultAuthorName), Email: author.Email},
		When:    time.Now(),
		Signer:  scope.signer,
	})
	if err != nil {
		return "", gitError(err)
	}
	note, err := updateNote(obj, scope, result)
	if err != nil {
		return "", err
	}
	if err := ws.AddNote(hash, note); err != nil {
		return "", gitError(err)
	}
	return hash, nil
}

// DefaultAuthorName is the author of commits whose spec names none.
const DefaultAuthorName = "windlass"

// pushOptions returns where and how to push a group's branch.
func pushOptions(obj *imagev1.ImageUpdateAutomation, branch string) git.PushOptions {
	opts := git.PushOptions{Branch: branch, Notes: true}
	if g := obj.Spec.GitSpec; g != nil && g.Push != nil {
		opts.RefSpec, opts.Options = g.Push.Refspec, g.Push.Options
	}
	return opts
}

// recordPushes writes the outcome of a run to the status and records an
// event for each push, naming what it updated.
func (r *ImageUpdateAutomationReconciler) recordPushes(ctx context.Context, obj *imagev1.ImageUpdateAutomation, scope *automationScope,
	done []pushed, base *git.Commit) {
	before := obj.Status.DeepCopy()
	defer func() {
		// A checkout that found nothing new records nothing: a run that
		// read a stale status from the cache and checked out for nothing
		// writes nothing either.
		if obj.Status.LastPushCommit != before.LastPushCommit || obj.Status.ObservedSourceRevision != before.ObservedSourceRevision ||
			!maps.Equal(obj.Status.ObservedPolicies, before.ObservedPolicies) {
			obj.Status.LastAutomationRunTime = &metav1.Time{Time: scope.runStarted}
		}
	}()
	obj.Status.ObservedPolicies = scope.observed
	obj.Status.ObservedSourceRevision = revisionOf(checkoutBranch(scope), base.Hash)
	for _, p := range done {
		if p.result == nil {
			continue
		}
		now := metav1.Now()
		obj.Status.LastPushCommit, obj.Status.LastPushTime = p.commit, &now
		revision := revisionOf(p.branch, p.commit)
		if len(done) == 1 {
			obj.Status.ObservedSourceRevision = revision
		}
		r.Events.Normal(ctx, obj, "Pushed", revision, pushMessage(p))
	}
	if len(done) == 1 && done[0].result == nil {
		obj.Status.ObservedSourceRevision = revisionOf(done[0].branch, done[0].commit)
	}
}

// pushMessage is the event of a push: the commit, the branch and every
// change.
func pushMessage(p pushed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pushed commit '%s' to branch '%s'", shortHash(p.commit), p.branch)
	for _, c := range p.result.Changes() {
		fmt.Fprintf(&b, "\n- %s -> %s", c.OldValue, c.NewValue)
	}
	return b.String()
}

// revisionOf returns the revision of a commit on a branch, as the source
// controller writes it (branch@sha1:hash).
func revisionOf(branch, hash string) string {
	if branch == "" {
		return "sha1:" + hash
	}
	return branch + "@sha1:" + hash
}

// gitError classifies an error of the git client: options or credentials
// that can never work stall; other failures are retried.
func gitError(err error) error {
	var (
		invalidOptions *git.InvalidOptionsError
		invalidAuth    *git.InvalidAuthError
	)
	switch {
	case errors.As(err, &invalidOptions), errors.As(err, &invalidAuth):
		return outcome.Stall(imagev1.ReasonInvalidSourceConfiguration, err)
	case git.IsAuthError(err):
		return outcome.Fail(imagev1.ReasonAuthenticationFailed, err)
	}
	return outcome.Fail(imagev1.ReasonGitOperationFailed, err)
}
