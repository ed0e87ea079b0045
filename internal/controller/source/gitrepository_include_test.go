package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// stepStorage returns an artifact storage in a temporary folder.
func stepStorage(t *testing.T, g *WithT) *artifact.Storage {
	store, err := artifact.New(t.TempDir(), "storage.example:9090", time.Minute, 1)
	g.Expect(err).NotTo(HaveOccurred())
	return store
}

// storeTree archives files as the artifact of the GitRepository apps/name
// at revision, and returns it.
func storeTree(t *testing.T, g *WithT, store *artifact.Storage, name, revision string, files map[string]string) *meta.Artifact {
	owner := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
	a := store.NewArtifactFor(sourcev1.GitRepositoryKind, owner, revision, name+".tar.gz")
	g.Expect(store.Archive(&a, testutil.WriteTree(t, files), nil)).To(Succeed())
	return &a
}

// stepGitRepository returns the GitRepository apps/app with includes.
func stepGitRepository(includes ...sourcev1.GitRepositoryInclude) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", Generation: 1},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Hour},
			Include: includes},
	}
}

// include names the GitRepository lib, with the paths of a spec.include.
func include(from, to string) sourcev1.GitRepositoryInclude {
	return sourcev1.GitRepositoryInclude{GitRepositoryRef: meta.LocalObjectReference{Name: "lib"}, FromPath: from, ToPath: to}
}

// TestStep_ReconcileInclude runs the include step alone on a checkout:
// nothing is copied for an up-to-date run; an included artifact lands at
// its toPath (the repository's name by default), from its fromPath,
// replacing what was there, and never outside the checkout; an included
// artifact gone from storage fails the run (IncludeUnavailable) and says so
// in the IncludeUnavailable condition.
func TestStep_ReconcileInclude(t *testing.T) {
	libFiles := map[string]string{"README.md": "lib\n", "deploy/lib.yaml": "kind: Lib\n"}
	tests := []struct {
		name     string
		includes []sourcev1.GitRepositoryInclude
		upToDate bool
		// before prepares the checkout and the stored included artifact.
		before func(t *testing.T, g *WithT, workDir string, lib *meta.Artifact, store *artifact.Storage)
		// wantFiles is the checkout afterwards.
		wantFiles      map[string]string
		wantErr        testutil.Outcome
		wantReason     string
		wantMsg        string
		wantConditions []string
	}{
		{name: "an up-to-date run copies nothing", includes: []sourcev1.GitRepositoryInclude{include("", "")}, upToDate: true,
			wantFiles: map[string]string{"app.yaml": "kind: App\n"}, wantConditions: []string{}},
		{name: "no includes",
			wantFiles: map[string]string{"app.yaml": "kind: App\n"}, wantConditions: []string{}},
		{name: "the whole artifact under the repository's name", includes: []sourcev1.GitRepositoryInclude{include("", "")},
			wantFiles:      map[string]string{"app.yaml": "kind: App\n", "lib/README.md": "lib\n", "lib/deploy/lib.yaml": "kind: Lib\n"},
			wantConditions: []string{}},
		{name: "fromPath to toPath", includes: []sourcev1.GitRepositoryInclude{include("deploy", "vendor/lib")},
			wantFiles:      map[string]string{"app.yaml": "kind: App\n", "vendor/lib/lib.yaml": "kind: Lib\n"},
			wantConditions: []string{}},
		{name: "what the checkout had at toPath is replaced", includes: []sourcev1.GitRepositoryInclude{include("deploy", "vendor")},
			before: func(t *testing.T, g *WithT, workDir string, _ *meta.Artifact, _ *artifact.Storage) {
				g.Expect(os.MkdirAll(filepath.Join(workDir, "vendor"), 0o755)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(workDir, "vendor", "stale.yaml"), []byte("stale\n"), 0o600)).To(Succeed())
			},
			wantFiles: map[string]string{"app.yaml": "kind: App\n", "vendor/lib.yaml": "kind: Lib\n"}, wantConditions: []string{}},
		{name: "a toPath that climbs stays inside the checkout", includes: []sourcev1.GitRepositoryInclude{include("deploy", "../../up")},
			wantFiles: map[string]string{"app.yaml": "kind: App\n", "up/lib.yaml": "kind: Lib\n"}, wantConditions: []string{}},
		{name: "two includes of one artifact", includes: []sourcev1.GitRepositoryInclude{include("deploy", "a"), include("", "b")},
			wantFiles: map[string]string{"app.yaml": "kind: App\n", "a/lib.yaml": "kind: Lib\n",
				"b/README.md": "lib\n", "b/deploy/lib.yaml": "kind: Lib\n"},
			wantConditions: []string{}},
		{name: "an included artifact gone from storage fails", includes: []sourcev1.GitRepositoryInclude{include("", "")},
			before: func(_ *testing.T, g *WithT, _ string, lib *meta.Artifact, store *artifact.Storage) {
				g.Expect(os.Remove(store.LocalPath(*lib))).To(Succeed())
			},
			wantFiles: map[string]string{"app.yaml": "kind: App\n"},
			wantErr:   testutil.Failing, wantReason: sourcev1.IncludeUnavailableReason, wantMsg: "including the artifact of 'lib'",
			wantConditions: []string{"IncludeUnavailable=True/IncludeUnavailable"}},
		{name: "an included artifact altered in storage fails", includes: []sourcev1.GitRepositoryInclude{include("", "")},
			before: func(_ *testing.T, g *WithT, _ string, lib *meta.Artifact, store *artifact.Storage) {
				g.Expect(os.WriteFile(store.LocalPath(*lib), []byte("not a tarball"), 0o600)).To(Succeed())
			},
			wantFiles: map[string]string{"app.yaml": "kind: App\n"},
			wantErr:   testutil.Failing, wantReason: sourcev1.IncludeUnavailableReason, wantMsg: "including the artifact of 'lib'",
			wantConditions: []string{"IncludeUnavailable=True/IncludeUnavailable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			store := stepStorage(t, g)
			lib := storeTree(t, g, store, "lib", "main@sha1:2", libFiles)
			workDir := testutil.WriteTree(t, map[string]string{"app.yaml": "kind: App\n"})
			if tt.before != nil {
				tt.before(t, g, workDir, lib, store)
			}
			sc := &gitScope{workDir: workDir, upToDate: tt.upToDate}
			for range tt.includes {
				sc.includes = append(sc.includes, lib)
			}
			obj := stepGitRepository(tt.includes...)
			r := &GitRepositoryReconciler{Storage: store}

			res, err := r.reconcileInclude(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(testutil.ConditionSummary(obj)).To(Equal(tt.wantConditions))
			if tt.wantErr != testutil.NoError {
				g.Expect(conditions.Message(obj, sourcev1.IncludeUnavailableCondition)).To(Equal(err.Error()))
			}
			g.Expect(testutil.ReadTree(t, workDir)).To(Equal(tt.wantFiles))
			g.Expect(filepath.Join(workDir, "..", "up")).NotTo(BeADirectory())
		})
	}
}

// TestStep_ReconcileArtifact runs the artifact step alone on a checkout:
// an up-to-date run only confirms the stored artifact; a new commit is
// archived, with the spec's ignore rules, recorded in the status with what
// it was built from, and announced by a NewArtifact event when its content
// changed (to the Sink alone for the first artifact, which the status
// tells users); a held revision keeps its revision and is not announced; a
// checkout that cannot be archived fails (StorageOperationFailed).
func TestStep_ReconcileArtifact(t *testing.T) {
	const hash = "0123456789abcdef0123456789abcdef01234567"
	commit := &git.Commit{Hash: hash, Reference: "refs/heads/main", Message: "Add the app\n\nbody"}
	ada := &git.Signature{Name: "Ada", Email: "ada@example.com", When: time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)}
	concrete := &git.Commit{Hash: hash, Reference: "refs/heads/main", Message: "Add the app\n\nbody", Author: ada, Committer: ada,
		Encoded: []byte("tree ...")}
	aboutAda := map[string]string{git.AuthorMetadataKey: "Ada <ada@example.com>", git.TimeMetadataKey: "2026-11-02T09:30:00Z",
		git.SubjectMetadataKey: "Add the app"}
	checkout := map[string]string{"app.yaml": "kind: App\n", "README.md": "docs\n"}
	ignore := "*.md\n"
	note := imageupdate.NoteHeader + "automation: fleet\n"
	tests := []struct {
		name     string
		upToDate bool
		held     string
		note     string
		// commit replaces the partial commit of the checkout.
		commit *git.Commit
		// before prepares the object, its storage and the checkout.
		before func(t *testing.T, g *WithT, obj *sourcev1.GitRepository, store *artifact.Storage, workDir string)
		mutate func(obj *sourcev1.GitRepository)
		// wantRevision is the artifact's revision afterwards, "" for none.
		wantRevision string
		// wantFiles is the stored artifact's content.
		wantFiles    map[string]string
		wantMetadata map[string]string
		// wantEvents are the Kubernetes events; wantForwarded the events
		// for the Sink only (a first artifact's), if any.
		wantEvents     []string
		wantForwarded  []string
		wantErr        testutil.Outcome
		wantReason     string
		wantMsg        string
		wantConditions []string
	}{
		{name: "up to date: the stored artifact is confirmed", upToDate: true,
			before: func(t *testing.T, g *WithT, obj *sourcev1.GitRepository, store *artifact.Storage, _ string) {
				obj.Status.Artifact = storeTree(t, g, store, "app", "main@sha1:old", map[string]string{"old.yaml": "old\n"})
				conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason, "stored")
				conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "new")
			},
			wantRevision: "main@sha1:old", wantFiles: map[string]string{"old.yaml": "old\n"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "a new commit is stored and announced",
			before: func(t *testing.T, g *WithT, obj *sourcev1.GitRepository, store *artifact.Storage, _ string) {
				obj.Status.Artifact = storeTree(t, g, store, "app", "main@sha1:old", map[string]string{"old.yaml": "old\n"})
				conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "new upstream revision")
				conditions.MarkTrue(obj, sourcev1.StorageOperationFailedCondition, sourcev1.ArchiveOperationFailedReason, "earlier failure")
			},
			wantRevision: "main@sha1:" + hash, wantFiles: checkout,
			wantEvents:     []string{"Normal NewArtifact stored artifact for commit 'Add the app'"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "up to date but the artifact was lost: stored again", upToDate: true,
			wantRevision: "main@sha1:" + hash, wantFiles: checkout,
			wantForwarded:  []string{"Normal NewArtifact stored artifact for commit 'Add the app'"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "the ignore rules leave files out", mutate: func(obj *sourcev1.GitRepository) { obj.Spec.Ignore = &ignore },
			wantRevision: "main@sha1:" + hash, wantFiles: map[string]string{"app.yaml": "kind: App\n"},
			wantForwarded:  []string{"Normal NewArtifact stored artifact for commit 'Add the app'"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "the same content at a new revision is not announced",
			before: func(t *testing.T, g *WithT, obj *sourcev1.GitRepository, store *artifact.Storage, _ string) {
				obj.Status.Artifact = storeTree(t, g, store, "app", "main@sha1:old", checkout)
			},
			wantRevision: "main@sha1:" + hash, wantFiles: checkout, wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "a held revision keeps its revision, unannounced", held: "main@sha1:held",
			wantRevision: "main@sha1:held", wantFiles: checkout, wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "an image update note is kept in the metadata", note: note,
			wantRevision: "main@sha1:" + hash, wantFiles: checkout, wantMetadata: map[string]string{imageupdate.NoteMetadataKey: note},
			wantForwarded:  []string{"Normal NewArtifact stored artifact for commit 'Add the app'"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "the commit's author, time and subject are kept in the metadata", commit: concrete,
			wantRevision: "main@sha1:" + hash, wantFiles: checkout, wantMetadata: aboutAda,
			wantForwarded:  []string{"Normal NewArtifact stored artifact for commit 'Add the app'"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "a partial commit of the same revision keeps what the artifact said of it",
			before: func(t *testing.T, g *WithT, obj *sourcev1.GitRepository, store *artifact.Storage, _ string) {
				obj.Status.Artifact = storeTree(t, g, store, "app", "main@sha1:"+hash, map[string]string{"old.yaml": "old\n"})
				obj.Status.Artifact.Metadata = aboutAda
			},
			wantRevision: "main@sha1:" + hash, wantFiles: checkout, wantMetadata: aboutAda,
			wantEvents:     []string{"Normal NewArtifact stored artifact for commit 'Add the app'"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "another note is not", note: "reviewed-by: someone\n",
			wantRevision: "main@sha1:" + hash, wantFiles: checkout,
			wantForwarded:  []string{"Normal NewArtifact stored artifact for commit 'Add the app'"},
			wantConditions: []string{"ArtifactInStorage=True/Succeeded"}},
		{name: "a checkout that cannot be archived fails",
			before: func(_ *testing.T, g *WithT, obj *sourcev1.GitRepository, _ *artifact.Storage, workDir string) {
				g.Expect(os.RemoveAll(workDir)).To(Succeed())
				conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "new upstream revision")
			},
			wantErr: testutil.Failing, wantReason: sourcev1.ArchiveOperationFailedReason, wantMsg: "reading ignore rules",
			wantConditions: []string{"ArtifactOutdated=True/NewRevision", "StorageOperationFailed=True/ArchiveOperationFailed"}},
		{name: "a storage that cannot be written fails",
			before: func(_ *testing.T, g *WithT, _ *sourcev1.GitRepository, store *artifact.Storage, _ string) {
				dir := filepath.Join(store.BasePath(), "gitrepository", "apps")
				g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(dir, "app"), []byte("a file where a folder goes"), 0o600)).To(Succeed())
			},
			wantErr: testutil.Failing, wantReason: sourcev1.ArchiveOperationFailedReason,
			wantMsg:        "archiving the checkout: creating artifact directory",
			wantConditions: []string{"StorageOperationFailed=True/ArchiveOperationFailed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			store := stepStorage(t, g)
			workDir := testutil.WriteTree(t, checkout)
			obj := stepGitRepository(include("", ""))
			obj.Spec.SparseCheckout = []string{"deploy"}
			if tt.mutate != nil {
				tt.mutate(obj)
			}
			if tt.before != nil {
				tt.before(t, g, obj, store, workDir)
			}
			previous := obj.Status.Artifact.DeepCopy()
			lib := storeTree(t, g, store, "lib", "main@sha1:2", map[string]string{"lib.yaml": "kind: Lib\n"})
			c := *commit
			if tt.commit != nil {
				c = *tt.commit
			}
			c.Note = tt.note
			sc := &gitScope{workDir: workDir, commit: &c, upToDate: tt.upToDate, heldRevision: tt.held, includes: []*meta.Artifact{lib}}
			recorder := events.NewFakeRecorder(10)
			sink := &forwardedEvents{}
			r := &GitRepositoryReconciler{Storage: store, Events: &event.Recorder{Kubernetes: recorder, Sink: sink}}

			res, err := r.reconcileArtifact(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(testutil.ConditionSummary(obj)).To(Equal(tt.wantConditions))
			var recorded []string
			for len(recorder.Events) > 0 {
				recorded = append(recorded, <-recorder.Events)
			}
			g.Expect(recorded).To(Equal(tt.wantEvents))
			g.Expect(sink.events).To(Equal(append(tt.wantEvents, tt.wantForwarded...)), "the Sink hears of every artifact")
			if tt.wantRevision == "" {
				g.Expect(obj.Status.Artifact).To(Equal(previous), "a failed run keeps the artifact it had")
				g.Expect(obj.Status.IncludedArtifacts).To(BeNil())
				return
			}
			a := obj.Status.Artifact
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Revision).To(Equal(tt.wantRevision))
			g.Expect(a.Metadata).To(Equal(tt.wantMetadata))
			g.Expect(store.Verify(*a)).To(Succeed())
			stored := t.TempDir()
			g.Expect(store.ExtractTo(*a, "", stored)).To(Succeed())
			g.Expect(testutil.ReadTree(t, stored)).To(Equal(tt.wantFiles))
			if tt.upToDate && previous != nil {
				g.Expect(a).To(Equal(previous), "an up-to-date run builds nothing")
				g.Expect(obj.Status.IncludedArtifacts).To(BeNil())
				return
			}
			g.Expect(conditions.Message(obj, sourcev1.ArtifactInStorageCondition)).To(Equal("stored artifact for revision '" + tt.wantRevision + "'"))
			g.Expect(obj.Status.IncludedArtifacts).To(Equal([]*meta.Artifact{lib}))
			g.Expect(obj.Status.ObservedInclude).To(Equal(obj.Spec.Include))
			g.Expect(obj.Status.ObservedSparseCheckout).To(Equal([]string{"deploy"}))
			g.Expect(obj.Status.ObservedIgnore).To(Equal(obj.Spec.Ignore))
			if previous != nil {
				g.Expect(store.ArtifactExists(*previous)).To(BeFalse(), "the older artifact is collected")
			}
		})
	}
}

// forwardedEvents is an event Sink that keeps "Type Reason Message" of
// each event.
type forwardedEvents struct{ events []string }

func (f *forwardedEvents) Forward(_ context.Context, _ client.Object, e event.Event) {
	f.events = append(f.events, e.Type+" "+e.Reason+" "+e.Message)
}
