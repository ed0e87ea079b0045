package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/reconcile"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/secret"
	"github.com/windlass-dev/windlass/internal/sourceignore"
)

// sourceObject is an object of a source kind, as the steps that the source
// kinds share see it.
type sourceObject interface {
	reconcile.Object
	GetArtifact() *meta.Artifact
}

// artifactStore is what the reconcilers of the source kinds share: the
// storage of their artifacts and the recorder of their events.
type artifactStore struct {
	// kind names the source kind, the first folder of its artifacts.
	kind    string
	storage *artifact.Storage
	events  *event.Recorder
}

// storageCheck is what a run's storage check (reconcileStorage) left for
// its artifact step: the artifact it forgot, whose file was missing or
// altered, if any. Every source kind's scope embeds one.
type storageCheck struct {
	forgotten *meta.Artifact
	// inStorage is the forgotten artifact's ArtifactInStorage condition,
	// put back when the artifact is built again as it was.
	inStorage *metav1.Condition
	// deferrable is set, before the check, by a kind that can tell
	// cheaply that its remote still serves the artifact's revision (a
	// GitRepository lists the remote's references, an OCIRepository
	// resolves its tag with a HEAD request, a Bucket lists its objects);
	// deferred is then set when the artifact, which another replica
	// stored, is kept in the status though this storage lacks it: the run
	// checks the remote, and when nothing moved the artifact is stored
	// again only when a reader asks for it (see artifact.Storage.Defer
	// and artifactStore.upToDate).
	deferrable, deferred bool
}

// upToDate ends a run whose remote still serves the revision of obj's
// artifact: the artifact is not outdated and, when the storage check
// deferred it, it is stored again only once a reader asks for it.
func (s artifactStore) upToDate(ctx context.Context, obj sourceObject, check storageCheck) {
	conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
	if a := obj.GetArtifact(); check.deferred && a != nil {
		s.storage.Defer(s.kind, obj, *a)
		ctrl.LoggerFrom(ctx).V(1).Info("Artifact stored by another replica, the remote unchanged: storing it again when asked", "revision", a.Revision)
	}
}

// reconcileStorage checks that the artifact named in obj's status is in
// storage with the digest it claims. A missing or altered file is removed
// and the artifact forgotten (forget clears it from the status, check
// keeps it), so that the next steps build it again; but one that another
// replica stored is kept, when check is deferrable and no reader asked
// for it (see storageCheck). The readers of one that another replica
// stored and that this run stores again wait for it (see
// artifact.Storage.Storing; the run's end ends their wait: see
// sourceKind).
func (s artifactStore) reconcileStorage(ctx context.Context, obj sourceObject, check *storageCheck, forget func()) {
	a := obj.GetArtifact()
	if a == nil {
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		reconcile.MarkProgress(obj, "building artifact")
		return
	}
	why := s.checkStoredArtifact(ctx, obj, *a)
	if why == storedElsewhere && check.deferrable && s.storage.Shared() && !s.storage.AskedToStore(s.kind, obj) {
		check.deferred = true
		return
	}
	if why == storedElsewhere {
		s.storage.Storing(s.kind, obj, *a)
	}
	if why != "" {
		check.forgotten = a.DeepCopy()
		if c := conditions.Get(obj, sourcev1.ArtifactInStorageCondition); c != nil {
			check.inStorage = c.DeepCopy()
		}
		forget()
		conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
			"artifact %s", why)
		reconcile.MarkProgress(obj, "building artifact: %s", why)
		return
	}
	// The advertised address may have changed since the artifact was stored.
	a.URL = s.storage.NewArtifactFor(s.kind, obj, a.Revision, a.FileName()).URL
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision '%s'", a.Revision)
}

// checkStoredArtifact verifies that a is in storage with the digest it
// claims. When it is not, it removes an altered file, logs and records a
// Warning event, and returns why the artifact is unusable; it returns ""
// for an artifact that is fine. An artifact that another address stored
// (another replica, whose objects this one took over) and that is not in
// this storage is fetched again without a warning: nothing went wrong.
func (s artifactStore) checkStoredArtifact(ctx context.Context, obj sourceObject, a meta.Artifact) string {
	err := s.storage.Verify(a)
	if err == nil {
		return ""
	}
	if s.storage.StoredElsewhere(s.kind, obj, a) {
		ctrl.LoggerFrom(ctx).V(1).Info("Artifact stored at another address, fetching it again", "url", a.URL)
		return storedElsewhere
	}
	why := "disappeared from storage"
	if s.storage.ArtifactExists(a) {
		why = "does not match its digest"
		_ = os.Remove(s.storage.LocalPath(a))
	}
	ctrl.LoggerFrom(ctx).Info("Artifact "+why+", rebuilding", "path", a.Path, "error", err.Error())
	s.events.Warning(ctx, obj, sourcev1.StorageOperationFailedReason, a.Revision,
		fmt.Sprintf("artifact for revision '%s' %s", a.Revision, why))
	return why
}

// storedElsewhere says why an artifact that another replica stored is
// built again.
const storedElsewhere = "was stored at another address"

// artifactChange is what storing an artifact changed in a source's status.
type artifactChange int

const (
	// artifactUnchanged: the content is the previous artifact's.
	artifactUnchanged artifactChange = iota
	// artifactFirst: the source had no artifact before.
	artifactFirst
	// artifactReplaced: new content replaced the previous artifact's.
	artifactReplaced
)

// stored records a that was just written to storage as obj's artifact
// (set writes it to the status), says so in the conditions, and collects
// the object's older artifacts. It returns what changed from what the
// status had: an artifact that the run's storage check forgot and built
// again with the same content (its file was lost with another replica, or
// an emptyDir) is no change.
func (s artifactStore) stored(ctx context.Context, obj sourceObject, check storageCheck, a meta.Artifact, set func(*meta.Artifact)) artifactChange {
	previous := obj.GetArtifact()
	if previous == nil {
		previous = check.forgotten
	}
	change := artifactReplaced
	switch {
	case previous == nil:
		change = artifactFirst
	case previous.HasDigest(a.Digest):
		change = artifactUnchanged
	}
	conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
	conditions.Delete(obj, sourcev1.StorageOperationFailedCondition)
	s.storage.Undefer(s.kind, obj)
	if f := check.forgotten; f != nil && sameArtifact(*f, a) {
		// Built again here as another replica stored it, under the same
		// URL (the replicas share their address): the status stays as it
		// was, and costs no write. The consumers waiting for it here are
		// told (see artifact.Storage.StoredAgain).
		set(f)
		s.restoreInStorage(obj, check.inStorage, a.Revision)
		s.storage.StoredAgain(s.kind, obj)
	} else {
		set(&a)
		conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason, "stored artifact for revision '%s'", a.Revision)
	}
	if deleted, err := s.storage.GarbageCollect(ctx, a); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Garbage collection of old artifacts failed")
	} else if len(deleted) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Garbage collected old artifacts", "files", deleted)
	}
	return change
}

// sameArtifact tells whether b, just stored, is a as the status named it:
// the same file, URL and content, whenever it was stored.
func sameArtifact(a, b meta.Artifact) bool {
	b.LastUpdateTime = a.LastUpdateTime
	return equality.Semantic.DeepEqual(a, b)
}

// restoreInStorage sets obj's ArtifactInStorage condition back to was, the
// condition of the artifact of revision before the run forgot it, when it
// said the artifact was stored; to a new one otherwise.
func (s artifactStore) restoreInStorage(obj sourceObject, was *metav1.Condition, revision string) {
	message := fmt.Sprintf("stored artifact for revision '%s'", revision)
	if was == nil || was.Status != metav1.ConditionTrue || was.Reason != meta.SucceededReason || was.Message != message {
		conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason, "%s", message)
		return
	}
	restored := *was
	restored.ObservedGeneration = obj.GetGeneration()
	all := obj.GetConditions()
	apimeta.SetStatusCondition(&all, restored)
	obj.SetConditions(all)
}

// announce records the event of a stored artifact: a Kubernetes event when
// its content replaced the previous artifact's; for a source's first
// artifact, an event for the Sink only, which alerts still hear: the
// source's status tells users as much (Ready: "stored artifact for
// revision ..."), and a source reaches Ready with one API request less.
func (s artifactStore) announce(ctx context.Context, obj sourceObject, change artifactChange, reason, revision, message string) {
	switch change {
	case artifactReplaced:
		s.events.Normal(ctx, obj, reason, revision, message)
	case artifactFirst:
		s.events.Forward(ctx, obj, event.Event{Type: event.TypeNormal, Reason: reason, Revision: revision, Message: message})
	}
}

// archive packages dir into storage as a, with the ignore rules (and the
// .sourceignore files of dir), under the lock of a's file; what names the
// content in errors ("the checkout").
func (s artifactStore) archive(obj conditions.Setter, a *meta.Artifact, dir string, ignore *string, what string) error {
	filter, err := sourceignore.NewFilter(dir, ignore)
	if err != nil {
		return storageFailed(obj, sourcev1.ArchiveOperationFailedReason, fmt.Errorf("reading ignore rules: %w", err))
	}
	return s.archiveFiltered(obj, a, dir, filter, what)
}

// archiveFiltered packages dir into storage as a, less what filter leaves
// out (nothing when nil), under the lock of a's file.
func (s artifactStore) archiveFiltered(obj conditions.Setter, a *meta.Artifact, dir string, filter archive.Filter, what string) error {
	return s.locked(obj, a, what, func() error { return s.storage.Archive(a, dir, filter) })
}

// archiveFiles packages files, a checkout left in memory, into storage as
// a, with the ignore rules (and the .sourceignore files of files), under
// the lock of a's file; it gives the bytes archive gives for the same
// files on disk.
func (s artifactStore) archiveFiles(obj conditions.Setter, a *meta.Artifact, files archive.Tree, ignore *string, what string) error {
	filter, err := sourceignore.NewTreeFilter(files, ignore)
	if err != nil {
		return storageFailed(obj, sourcev1.ArchiveOperationFailedReason, fmt.Errorf("reading ignore rules: %w", err))
	}
	return s.locked(obj, a, what, func() error { return s.storage.ArchiveTree(a, files, filter) })
}

// locked runs build, which writes a's file, under the lock of the file;
// what names the content in errors ("the checkout").
func (s artifactStore) locked(obj conditions.Setter, a *meta.Artifact, what string, build func() error) error {
	unlock, err := s.storage.Lock(*a)
	if err != nil {
		return storageFailed(obj, sourcev1.StorageOperationFailedReason, err)
	}
	defer unlock()
	if err := build(); err != nil {
		return storageFailed(obj, sourcev1.ArchiveOperationFailedReason, fmt.Errorf("archiving %s: %w", what, err))
	}
	return nil
}

// removeAll removes the artifacts of a deleted object from storage.
func (s artifactStore) removeAll(_ context.Context, obj client.Object) error {
	dir := s.storage.NewArtifactFor(s.kind, obj, "", "*")
	if _, err := s.storage.RemoveAll(dir); err != nil {
		return outcome.Fail(sourcev1.StorageOperationFailedReason, fmt.Errorf("failed to remove the artifacts: %w", err))
	}
	return nil
}

// forget drops what the process keeps of the source key, deleted or held
// by another replica: the fingerprints of its artifacts' trees, the
// deferral of its artifact and, when
// the replicas share one address (see artifact.Storage.SetShared), its
// artifacts, which consumers now download from the replica that holds it.
func (s artifactStore) forget(key types.NamespacedName) {
	s.forgetTrees(key)
	s.storage.Undefer(s.kind, &metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name})
	if s.storage.Shared() {
		s.sweep(context.Background(), &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	}
}

// forgetTrees drops the fingerprints kept for the artifacts of the object
// key.
func (s artifactStore) forgetTrees(key types.NamespacedName) {
	s.storage.ForgetTrees(s.kind, key.Namespace, key.Name)
}

// sourceFetcher returns how a reconciler that builds from other sources'
// artifacts reads them: from storage, or over HTTP too when remote is set.
func sourceFetcher(storage *artifact.Storage, remote *fetch.HTTP) fetch.Patcher {
	local := &fetch.Local{Storage: storage}
	if remote == nil {
		return local
	}
	return &fetch.LocalOrHTTP{Local: local, HTTP: remote}
}

// sourceRequeue is how long a reconciler that builds from another source
// waits for one without an artifact: configured, else
// defaultSourceRequeue.
func sourceRequeue(configured time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	return defaultSourceRequeue
}

// secretData returns the data of the Secret name in namespace ns.
func secretData(ctx context.Context, c client.Reader, ns, name string) (map[string][]byte, error) {
	return secret.Data(ctx, c, ns, name)
}

// fetchFailed records a failure to reach a source's server in the
// FetchFailed condition and returns it as a reconcile error: a reconcile
// error keeps its reason; an error that wraps denied (the server refused
// the credentials) is AuthenticationFailed; any other error fails with
// reason and is retried.
func fetchFailed(obj conditions.Setter, reason string, denied, err error) error {
	if outcome.ReasonOf(err, "") == "" {
		if errors.Is(err, denied) {
			reason = sourcev1.AuthenticationFailedReason
		}
		err = outcome.Fail(reason, err)
	}
	conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, outcome.ReasonOf(err, reason), "%s", err.Error())
	return err
}

// storedMessage is the message of a Ready source.
func storedMessage[T sourceObject](obj T) string {
	a := obj.GetArtifact()
	if a == nil {
		return ""
	}
	return fmt.Sprintf("stored artifact for revision '%s'", a.Revision)
}

// storageFailed marks a failed storage operation.
func storageFailed(obj conditions.Setter, reason string, err error) error {
	conditions.MarkTrue(obj, sourcev1.StorageOperationFailedCondition, reason, "%s", err.Error())
	return outcome.Fail(reason, err)
}
