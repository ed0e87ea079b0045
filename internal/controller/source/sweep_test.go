package source

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/artifact"
	"github.com/windlass-dev/windlass/internal/shard"
)

// TestSweepHandedOver: a replica removes the artifacts of a source it no
// longer holds once the new holder published its own, and not before;
// never those of a source it holds or that nobody holds yet.
func TestSweepHandedOver(t *testing.T) {
	storage, err := artifact.New(t.TempDir(), "r0.example:9090", time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	store := artifactStore{kind: sourcev1.GitRepositoryKind, storage: storage}
	repo := func(bucket, url string) *sourcev1.GitRepository {
		r := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"}}
		if bucket != "" {
			r.Labels = map[string]string{shard.BucketLabel: bucket}
		}
		if url != "" {
			a := storage.NewArtifactFor(sourcev1.GitRepositoryKind, r, "main@sha1:1", "1.tar.gz")
			a.URL = url
			r.Status.Artifact = &a
		}
		return r
	}
	ours := storage.NewArtifactFor(sourcev1.GitRepositoryKind, repo("", ""), "main@sha1:1", "1.tar.gz").URL
	theirs := "http://r1.example:9090/gitrepository/team-a/app/1.tar.gz"
	tests := []struct {
		name      string
		obj       *sourcev1.GitRepository
		held      bool
		wantSwept bool
	}{
		{name: "held here", obj: repo("7", ours), held: true},
		{name: "handed over, the new holder has not published yet", obj: repo("7", ours)},
		{name: "handed over and published by the new holder", obj: repo("7", theirs), wantSwept: true},
		{name: "no bucket yet", obj: repo("", theirs)},
		{name: "no artifact", obj: repo("7", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a := storage.NewArtifactFor(sourcev1.GitRepositoryKind, tt.obj, "main@sha1:1", "1.tar.gz")
			g.Expect(store.copyBytes(tt.obj, &a, []byte("content"))).To(Succeed())
			if store.handedOver(tt.obj, tt.held) {
				store.sweep(context.Background(), tt.obj)
			}
			g.Expect(storage.ArtifactExists(a)).To(Equal(!tt.wantSwept))
		})
	}
}

// TestSweepMovedAway: the artifact of a generated ExternalArtifact leaves
// this replica's storage once another replica publishes it; one published
// from here, and another producer's, stay.
func TestSweepMovedAway(t *testing.T) {
	storage, err := artifact.New(t.TempDir(), "r0.example:9090", time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	store := artifactStore{kind: sourcev1.ExternalArtifactKind, storage: storage}
	ea := func(generated bool, url string) *sourcev1.ExternalArtifact {
		e := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"}}
		if generated {
			e.Labels = map[string]string{sourceextv1beta1.GeneratorLabel: "uid-1"}
		}
		if url != "" {
			a := storage.NewArtifactFor(sourcev1.ExternalArtifactKind, e, "latest@sha256:1", "1.tar.gz")
			a.URL = url
			e.Status.Artifact = &a
		}
		return e
	}
	ours := storage.NewArtifactFor(sourcev1.ExternalArtifactKind, ea(false, ""), "", "1.tar.gz").URL
	theirs := "http://r1.example:9090/externalartifact/team-a/app/1.tar.gz"
	tests := []struct {
		name      string
		obj       *sourcev1.ExternalArtifact
		wantSwept bool
	}{
		{name: "published from here", obj: ea(true, ours)},
		{name: "published again from another replica", obj: ea(true, theirs), wantSwept: true},
		{name: "another producer's", obj: ea(false, theirs)},
		{name: "no artifact yet", obj: ea(true, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a := storage.NewArtifactFor(sourcev1.ExternalArtifactKind, tt.obj, "latest@sha256:1", "1.tar.gz")
			g.Expect(storage.Copy(&a, strings.NewReader("content"))).To(Succeed())
			if store.movedAway(tt.obj) {
				store.sweep(context.Background(), tt.obj)
			}
			g.Expect(storage.ArtifactExists(a)).To(Equal(!tt.wantSwept))
		})
	}
}
